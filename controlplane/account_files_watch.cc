#include "controlplane/account_files_watch.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "absl/strings/str_cat.h"

namespace leash::controlplane {

const std::set<std::string>& AccountFilesWatch::DefaultNames() {
  static const auto* const names =
      new std::set<std::string>{"passwd", "group", "subuid", "subgid", "nsswitch.conf"};
  return *names;
}

absl::StatusOr<std::unique_ptr<AccountFilesWatch>> AccountFilesWatch::Start(
    const std::string& dir, std::set<std::string> names, std::function<void()> on_change) {
  const int inotify_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (inotify_fd < 0) return absl::ErrnoToStatus(errno, "inotify_init1");
  // Written in place, replaced by a rename, created, removed, or its mode changed.
  const uint32_t mask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_ATTRIB;
  if (inotify_add_watch(inotify_fd, dir.c_str(), mask | IN_ONLYDIR) < 0) {
    const int error = errno;
    close(inotify_fd);
    return absl::ErrnoToStatus(error, absl::StrCat("inotify_add_watch ", dir));
  }
  const int stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd < 0) {
    const int error = errno;
    close(inotify_fd);
    return absl::ErrnoToStatus(error, "eventfd");
  }
  return std::unique_ptr<AccountFilesWatch>(
      new AccountFilesWatch(inotify_fd, stop_fd, std::move(names), std::move(on_change)));
}

AccountFilesWatch::AccountFilesWatch(int inotify_fd, int stop_fd, std::set<std::string> names,
                                     std::function<void()> on_change)
    : inotify_fd_(inotify_fd),
      stop_fd_(stop_fd),
      names_(std::move(names)),
      on_change_(std::move(on_change)) {
  thread_ = std::thread([this] { Run(); });
}

AccountFilesWatch::~AccountFilesWatch() {
  const uint64_t one = 1;
  if (write(stop_fd_, &one, sizeof(one)) < 0) {
    // An eventfd write fails only on overflow, which one write cannot reach.
  }
  if (thread_.joinable()) thread_.join();
  close(inotify_fd_);
  close(stop_fd_);
}

void AccountFilesWatch::Run() {
  alignas(inotify_event) char buffer[16 * (sizeof(inotify_event) + 256)];
  while (true) {
    pollfd fds[2] = {{inotify_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    bool relevant = false;
    while (true) {
      const ssize_t n = read(inotify_fd_, buffer, sizeof(buffer));
      if (n <= 0) break;
      for (ssize_t at = 0; at < n;) {
        const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
        // A lost event (queue overflow) may have been one of ours.
        if ((event->mask & IN_Q_OVERFLOW) != 0) relevant = true;
        if (event->len > 0 && names_.count(event->name) > 0) relevant = true;
        at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      }
    }
    if (relevant) on_change_();
  }
}

}  // namespace leash::controlplane
