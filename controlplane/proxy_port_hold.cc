#include "controlplane/proxy_port_hold.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

namespace leash::controlplane {
namespace {

// A bound, not listening TCP (or `type`) socket on (address, port), or -1 with errno set. SO_REUSEPORT so
// the three sockets of a port coexist (and only sockets of leashd's UID may join them); never
// SO_REUSEADDR, which lets sockets of any UID share a port nobody listens on.
int BindHeld(int family, int type, const std::string& address, uint16_t port,
             bool v6only = true) {
  sockaddr_storage storage{};
  socklen_t length = 0;
  if (family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&storage);
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    if (inet_pton(AF_INET, address.c_str(), &in->sin_addr) != 1) {
      errno = EINVAL;
      return -1;
    }
    length = sizeof(*in);
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&storage);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    if (inet_pton(AF_INET6, address.c_str(), &in6->sin6_addr) != 1) {
      errno = EINVAL;
      return -1;
    }
    length = sizeof(*in6);
  }
  const int fd = socket(family, type | SOCK_CLOEXEC, type == SOCK_DGRAM ? IPPROTO_UDP : IPPROTO_TCP);
  if (fd < 0) return -1;
  const int one = 1;
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) {
    const int error = errno;
    close(fd);
    errno = error;
    return -1;
  }
  if (family == AF_INET6) {
    // ::1 holds IPv6 alone (127.0.0.1 is its own socket); the wildcard :: holds both.
    const int value = v6only ? 1 : 0;
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &value, sizeof(value));
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&storage), length) != 0) {
    const int error = errno;
    close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

std::string FormatHeld(const std::string& address, uint16_t port) {
  return address.find(':') == std::string::npos ? absl::StrCat(address, ":", port)
                                                 : absl::StrCat("[", address, "]:", port);
}

}  // namespace

ProxyPortHold::ProxyPortHold(Options options) : options_(std::move(options)) {
  const size_t count = options_.last_port - options_.first_port + 1;
  for (Sockets* sockets : {&tcp_, &udp_}) {
    sockets->v4.assign(count, -1);
    sockets->v6.assign(count, -1);
    sockets->any.assign(count, -1);
  }
}

ProxyPortHold::~ProxyPortHold() {
  for (const Sockets* sockets : {&tcp_, &udp_}) {
    for (const std::vector<int>* fds : {&sockets->v4, &sockets->v6, &sockets->any}) {
      for (int fd : *fds) {
        if (fd >= 0) close(fd);
      }
    }
  }
}

std::vector<ProxyPortHold::Missing> ProxyPortHold::TakeMissing(int attempts,
                                                               absl::Duration between) {
  std::vector<Missing> missing;
  for (int attempt = 0; attempt < std::max(attempts, 1); ++attempt) {
    if (attempt > 0) {
      if (missing.empty()) break;
      absl::SleepFor(between);
    }
    missing.clear();
    for (auto [sockets, type] : {std::pair{&tcp_, SOCK_STREAM}, std::pair{&udp_, SOCK_DGRAM}}) {
      const bool udp = type == SOCK_DGRAM;
      for (size_t i = 0; i < sockets->v4.size(); ++i) {
        const uint16_t port = static_cast<uint16_t>(options_.first_port + i);
        if (sockets->v4[i] < 0) {
          sockets->v4[i] = BindHeld(AF_INET, type, options_.ipv4_address, port);
          if (sockets->v4[i] < 0) missing.push_back({options_.ipv4_address, port, errno, true, udp});
        }
        if (sockets->v6[i] < 0 && ipv6_available_) {
          sockets->v6[i] = BindHeld(AF_INET6, type, options_.ipv6_address, port);
          if (sockets->v6[i] < 0) {
            if (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL) {
              // No IPv6 here (or no ::1 on lo): no redirect can target it and no process can
              // bind it; the proxy sees the same and listens on IPv4 alone.
              ipv6_available_ = false;
            } else {
              missing.push_back({options_.ipv6_address, port, errno, true, udp});
            }
          }
        }
        if (sockets->any[i] < 0) {
          const char* wildcard = ipv6_available_ ? "::" : "0.0.0.0";
          sockets->any[i] = ipv6_available_
                                ? BindHeld(AF_INET6, type, wildcard, port, /*v6only=*/false)
                                : BindHeld(AF_INET, type, wildcard, port);
          if (sockets->any[i] < 0) {
            missing.push_back({wildcard, port, errno, /*redirect_target=*/false, udp});
          }
        }
      }
    }
  }
  return missing;
}

absl::Status ProxyPortHold::Adopt(int fd) {
  int type = 0, reuseport = 0;
  socklen_t length = sizeof(type);
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("descriptor ", fd, " is not a socket"));
  }
  length = sizeof(reuseport);
  getsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &reuseport, &length);
  sockaddr_storage storage{};
  length = sizeof(storage);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length) != 0 ||
      (type != SOCK_STREAM && type != SOCK_DGRAM) || reuseport == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("descriptor ", fd, " is not a bound SO_REUSEPORT TCP or UDP socket"));
  }
  char text[INET6_ADDRSTRLEN] = {};
  uint16_t port = 0;
  bool v6 = storage.ss_family == AF_INET6;
  if (storage.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&storage);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    port = ntohs(in->sin_port);
  } else if (v6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&storage);
    inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
    port = ntohs(in6->sin6_port);
  } else {
    return absl::InvalidArgumentError(absl::StrCat("descriptor ", fd, " is not an IP socket"));
  }
  if (port < options_.first_port || port > options_.last_port) {
    return absl::InvalidArgumentError(
        absl::StrCat("descriptor ", fd, " is bound to port ", port, ", outside the range"));
  }
  Sockets& sockets = type == SOCK_DGRAM ? udp_ : tcp_;
  const size_t i = port - options_.first_port;
  const std::string address = text;
  std::vector<int>* slot = nullptr;
  if (!v6 && address == options_.ipv4_address) slot = &sockets.v4;
  if (v6 && address == options_.ipv6_address) slot = &sockets.v6;
  // The wildcard: :: dual stack, or 0.0.0.0 on a host without IPv6.
  if ((v6 && address == "::") || (!v6 && address == "0.0.0.0")) slot = &sockets.any;
  if (slot == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("descriptor ", fd, " is bound to ", address,
                                                   ", not an address leashd holds"));
  }
  if ((*slot)[i] >= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("descriptor ", fd, " is a second socket for ", address, " port ", port));
  }
  (*slot)[i] = fd;
  return absl::OkStatus();
}

std::vector<int> ProxyPortHold::AllDescriptors() const {
  std::vector<int> fds;
  for (const Sockets* sockets : {&tcp_, &udp_}) {
    for (const std::vector<int>* family : {&sockets->v4, &sockets->v6, &sockets->any}) {
      for (int fd : *family) {
        if (fd >= 0) fds.push_back(fd);
      }
    }
  }
  return fds;
}

std::vector<int> ProxyPortHold::Descriptors() const {
  std::vector<int> fds;
  for (const Sockets* sockets : {&tcp_, &udp_}) {
    for (const std::vector<int>* family : {&sockets->v4, &sockets->v6}) {
      for (int fd : *family) {
        if (fd >= 0) fds.push_back(fd);
      }
    }
  }
  return fds;
}

bool ProxyPortHold::Holds(uint16_t port) const {
  if (port < options_.first_port || port > options_.last_port) return false;
  const size_t i = port - options_.first_port;
  for (const Sockets* sockets : {&tcp_, &udp_}) {
    if (sockets->v4[i] < 0 || (ipv6_available_ && sockets->v6[i] < 0)) return false;
  }
  return true;
}

size_t ProxyPortHold::held() const { return Descriptors().size(); }

size_t ProxyPortHold::wanted() const { return ports() * (ipv6_available_ ? 4 : 2); }

size_t ProxyPortHold::total() const {
  size_t wildcards = 0;
  for (const Sockets* sockets : {&tcp_, &udp_}) {
    for (int fd : sockets->any) wildcards += fd >= 0 ? 1 : 0;
  }
  return held() + wildcards;
}

std::string ProxyPortHold::Describe(const std::vector<Missing>& unsorted) {
  // Consecutive ports of one address and one error fold into "first-last".
  std::vector<Missing> missing = unsorted;
  std::stable_sort(missing.begin(), missing.end(), [](const Missing& a, const Missing& b) {
    if (a.udp != b.udp) return b.udp;
    return a.address != b.address ? a.address < b.address : a.port < b.port;
  });
  std::vector<std::string> parts;
  for (size_t i = 0; i < missing.size();) {
    size_t j = i;
    while (j + 1 < missing.size() && missing[j + 1].udp == missing[i].udp &&
           missing[j + 1].address == missing[i].address &&
           missing[j + 1].error == missing[i].error && missing[j + 1].port == missing[j].port + 1) {
      ++j;
    }
    std::string part = absl::StrCat(missing[i].udp ? "udp " : "",
                                    FormatHeld(missing[i].address, missing[i].port));
    if (j > i) absl::StrAppend(&part, "-", missing[j].port);
    absl::StrAppend(&part, " (", strerror(missing[i].error), ")");
    parts.push_back(std::move(part));
    i = j + 1;
  }
  return absl::StrJoin(parts, ", ");
}

}  // namespace leash::controlplane
