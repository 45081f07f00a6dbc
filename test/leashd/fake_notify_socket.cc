#include "test/leashd/fake_notify_socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace leash::testing {

FakeNotifySocket::FakeNotifySocket(const std::string& path) : path_(path) {
  fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
  unlink(path.c_str());
  bound_ = bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  const timeval tick{0, 200000};  // so the reader sees stop_ without a datagram
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tick, sizeof(tick));
  const int size = 4 << 20;
  setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size));
  reader_ = std::thread([this] { Read(); });
}

FakeNotifySocket::~FakeNotifySocket() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  shutdown(fd_, SHUT_RDWR);
  reader_.join();
  close(fd_);
  unlink(path_.c_str());
  absl::MutexLock lock(&mu_);
  for (int fd : fds_) close(fd);
}

size_t FakeNotifySocket::size() {
  absl::MutexLock lock(&mu_);
  return fds_.size();
}

std::vector<int> FakeNotifySocket::fds() {
  absl::MutexLock lock(&mu_);
  return fds_;
}

std::vector<std::string> FakeNotifySocket::names() {
  absl::MutexLock lock(&mu_);
  return names_;
}

std::string FakeNotifySocket::NextMessage(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto arrived = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return next_message_ < messages_.size();
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&arrived), timeout)) return "";
  return messages_[next_message_++];
}

void FakeNotifySocket::Read() {
  std::vector<char> control(CMSG_SPACE(sizeof(int) * 253));
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stop_) return;
    }
    char text[4096];
    iovec iov{text, sizeof(text) - 1};
    msghdr message{};
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    message.msg_control = control.data();
    message.msg_controllen = control.size();
    const ssize_t n = recvmsg(fd_, &message, MSG_CMSG_CLOEXEC);
    if (n <= 0) continue;
    text[n] = '\0';
    std::vector<int> received;
    for (cmsghdr* h = CMSG_FIRSTHDR(&message); h != nullptr; h = CMSG_NXTHDR(&message, h)) {
      if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      const int* data = reinterpret_cast<const int*>(CMSG_DATA(h));
      received.assign(data, data + count);
    }
    std::string name = "stored";
    bool store = false;
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      if (line == "FDSTORE=1") store = true;
      if (absl::ConsumePrefix(&line, "FDNAME=")) name = std::string(line);
    }
    absl::MutexLock lock(&mu_);
    if (!store) messages_.emplace_back(text, static_cast<size_t>(n));
    for (int fd : received) {
      if (!store) {
        close(fd);
        continue;
      }
      // systemd keeps one copy of a kernel object: a descriptor sent twice is dropped.
      struct stat theirs {};
      if (fstat(fd, &theirs) != 0 || !kept_.insert({theirs.st_dev, theirs.st_ino}).second) {
        close(fd);
        continue;
      }
      fds_.push_back(fd);
      names_.push_back(name);
    }
  }
}

}  // namespace leash::testing
