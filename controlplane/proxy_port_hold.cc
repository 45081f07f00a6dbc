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

// A bound, not listening TCP socket on (address, port), or -1 with errno set. SO_REUSEPORT so
// the three sockets of a port coexist (and only sockets of leashd's UID may join them); never
// SO_REUSEADDR, which lets sockets of any UID share a port nobody listens on.
int BindHeld(int family, const std::string& address, uint16_t port, bool v6only = true) {
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
  const int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
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

ProxyPortHold::ProxyPortHold(Options options)
    : options_(std::move(options)),
      v4_(options_.last_port - options_.first_port + 1, -1),
      v6_(options_.last_port - options_.first_port + 1, -1),
      any_(options_.last_port - options_.first_port + 1, -1) {}

ProxyPortHold::~ProxyPortHold() {
  for (const std::vector<int>* fds : {&v4_, &v6_, &any_}) {
    for (int fd : *fds) {
      if (fd >= 0) close(fd);
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
    for (size_t i = 0; i < v4_.size(); ++i) {
      const uint16_t port = static_cast<uint16_t>(options_.first_port + i);
      if (v4_[i] < 0) {
        v4_[i] = BindHeld(AF_INET, options_.ipv4_address, port);
        if (v4_[i] < 0) missing.push_back({options_.ipv4_address, port, errno});
      }
      if (v6_[i] < 0 && ipv6_available_) {
        v6_[i] = BindHeld(AF_INET6, options_.ipv6_address, port);
        if (v6_[i] < 0) {
          if (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL) {
            // No IPv6 here (or no ::1 on lo): no redirect can target it and no process can
            // bind it; the proxy sees the same and listens on IPv4 alone.
            ipv6_available_ = false;
          } else {
            missing.push_back({options_.ipv6_address, port, errno});
          }
        }
      }
      if (any_[i] < 0) {
        const char* wildcard = ipv6_available_ ? "::" : "0.0.0.0";
        any_[i] = ipv6_available_ ? BindHeld(AF_INET6, wildcard, port, /*v6only=*/false)
                                  : BindHeld(AF_INET, wildcard, port);
        if (any_[i] < 0) missing.push_back({wildcard, port, errno, /*redirect_target=*/false});
      }
    }
  }
  return missing;
}

std::vector<int> ProxyPortHold::Descriptors() const {
  std::vector<int> fds;
  for (const std::vector<int>* family : {&v4_, &v6_}) {
    for (int fd : *family) {
      if (fd >= 0) fds.push_back(fd);
    }
  }
  return fds;
}

bool ProxyPortHold::Holds(uint16_t port) const {
  if (port < options_.first_port || port > options_.last_port) return false;
  const size_t i = port - options_.first_port;
  return v4_[i] >= 0 && (!ipv6_available_ || v6_[i] >= 0);
}

size_t ProxyPortHold::held() const { return Descriptors().size(); }

size_t ProxyPortHold::wanted() const { return v4_.size() * (ipv6_available_ ? 2 : 1); }

size_t ProxyPortHold::total() const {
  size_t wildcards = 0;
  for (int fd : any_) wildcards += fd >= 0 ? 1 : 0;
  return held() + wildcards;
}

std::string ProxyPortHold::Describe(const std::vector<Missing>& unsorted) {
  // Consecutive ports of one address and one error fold into "first-last".
  std::vector<Missing> missing = unsorted;
  std::stable_sort(missing.begin(), missing.end(), [](const Missing& a, const Missing& b) {
    return a.address != b.address ? a.address < b.address : a.port < b.port;
  });
  std::vector<std::string> parts;
  for (size_t i = 0; i < missing.size();) {
    size_t j = i;
    while (j + 1 < missing.size() && missing[j + 1].address == missing[i].address &&
           missing[j + 1].error == missing[i].error && missing[j + 1].port == missing[j].port + 1) {
      ++j;
    }
    std::string part = FormatHeld(missing[i].address, missing[i].port);
    if (j > i) absl::StrAppend(&part, "-", missing[j].port);
    absl::StrAppend(&part, " (", strerror(missing[i].error), ")");
    parts.push_back(std::move(part));
    i = j + 1;
  }
  return absl::StrJoin(parts, ", ");
}

}  // namespace leash::controlplane
