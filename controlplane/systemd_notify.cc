#include "controlplane/systemd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace leash::controlplane {

absl::Status NotifySystemd(absl::string_view state) {
  const char* const name = std::getenv("NOTIFY_SOCKET");
  if (name == nullptr || name[0] == '\0') return absl::OkStatus();
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
  const ssize_t sent = sendto(fd, state.data(), state.size(), MSG_NOSIGNAL,
                              reinterpret_cast<const sockaddr*>(&address), address_length);
  const int send_errno = errno;
  close(fd);
  if (sent < 0 || static_cast<size_t>(sent) != state.size()) {
    return absl::UnavailableError(absl::StrCat("telling systemd '", StatusLine(state),
                                               "' through NOTIFY_SOCKET=", name, ": ",
                                               sent < 0 ? std::strerror(send_errno) : "short send"));
  }
  return absl::OkStatus();
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
