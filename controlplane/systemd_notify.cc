#include "controlplane/systemd_notify.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"

namespace leash::controlplane {
namespace {

// The kernel's limit on descriptors in one SCM_RIGHTS message (SCM_MAX_FD).
constexpr size_t kMaxFdsPerMessage = 253;

// Sends `state` with `fds` (possibly none) to $NOTIFY_SOCKET, which is `name`.
absl::Status SendNotify(const char* name, absl::string_view state, const int* fds, size_t count) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const size_t length = std::strlen(name);
  if ((name[0] != '/' && name[0] != '@') || length >= sizeof(address.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "NOTIFY_SOCKET='", name, "' is neither a path nor an abstract name ('@...') that fits"));
  }
  std::memcpy(address.sun_path, name, length);
  if (name[0] == '@') address.sun_path[0] = '\0';  // the abstract namespace
  const socklen_t address_length =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + length);
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("socket for NOTIFY_SOCKET: ", std::strerror(errno)));
  }
  iovec iov{const_cast<char*>(state.data()), state.size()};
  msghdr message{};
  message.msg_name = &address;
  message.msg_namelen = address_length;
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  std::vector<char> control;
  if (count > 0) {
    control.assign(CMSG_SPACE(sizeof(int) * count), 0);
    message.msg_control = control.data();
    message.msg_controllen = control.size();
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int) * count);
    std::memcpy(CMSG_DATA(header), fds, sizeof(int) * count);
  }
  const ssize_t sent = sendmsg(fd, &message, MSG_NOSIGNAL);
  const int send_errno = errno;
  close(fd);
  if (sent < 0 || static_cast<size_t>(sent) != state.size()) {
    return absl::UnavailableError(absl::StrCat("telling systemd '", StatusLine(state),
                                               "' through NOTIFY_SOCKET=", name, ": ",
                                               sent < 0 ? std::strerror(send_errno) : "short send"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status NotifySystemd(absl::string_view state) {
  const char* const name = std::getenv("NOTIFY_SOCKET");
  if (name == nullptr || name[0] == '\0') return absl::OkStatus();
  return SendNotify(name, state, nullptr, 0);
}

absl::Status StoreFdsInSystemd(absl::string_view fd_name, const std::vector<int>& fds) {
  const char* const name = std::getenv("NOTIFY_SOCKET");
  if (name == nullptr || name[0] == '\0') return absl::OkStatus();
  // FDPOLL=0: systemd otherwise drops a stored descriptor once it polls POLLHUP, which a bound,
  // unconnected TCP socket (every one leashd holds but the proxy has not listen()ed) always does.
  const std::string state = absl::StrCat("FDSTORE=1\nFDNAME=", fd_name, "\nFDPOLL=0");
  for (size_t i = 0; i < fds.size(); i += kMaxFdsPerMessage) {
    const size_t count = std::min(kMaxFdsPerMessage, fds.size() - i);
    if (absl::Status sent = SendNotify(name, state, fds.data() + i, count); !sent.ok()) {
      return sent;
    }
  }
  return absl::OkStatus();
}

std::vector<std::pair<int, std::string>> TakeListenFds() {
  std::vector<std::pair<int, std::string>> out;
  const char* const pid = std::getenv("LISTEN_PID");
  const char* const count = std::getenv("LISTEN_FDS");
  const char* const names = std::getenv("LISTEN_FDNAMES");
  int64_t listen_pid = 0;
  int listen_fds = 0;
  if (pid != nullptr && count != nullptr && absl::SimpleAtoi(pid, &listen_pid) &&
      listen_pid == getpid() && absl::SimpleAtoi(count, &listen_fds) && listen_fds > 0) {
    const std::vector<std::string> split =
        names == nullptr ? std::vector<std::string>() : absl::StrSplit(names, ':');
    constexpr int kFirst = 3;  // SD_LISTEN_FDS_START
    for (int i = 0; i < listen_fds; ++i) {
      const int fd = kFirst + i;
      if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) continue;  // not open: nothing to take
      out.emplace_back(fd, i < static_cast<int>(split.size()) ? split[i] : "unknown");
    }
  }
  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_FDNAMES");
  return out;
}

std::optional<absl::Duration> WatchdogPingInterval() {
  const char* const usec = std::getenv("WATCHDOG_USEC");
  uint64_t microseconds = 0;
  if (usec == nullptr || !absl::SimpleAtoi(usec, &microseconds) || microseconds == 0) {
    return std::nullopt;
  }
  if (const char* const pid = std::getenv("WATCHDOG_PID"); pid != nullptr && pid[0] != '\0') {
    int64_t watched = 0;
    if (!absl::SimpleAtoi(pid, &watched) || watched != getpid()) return std::nullopt;
  }
  return absl::Microseconds(microseconds) / 2;
}

std::string StatusLine(absl::string_view text) {
  return absl::StrReplaceAll(text, {{"\n", "; "}});
}

}  // namespace leash::controlplane
