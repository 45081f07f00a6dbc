// Servers for traffic tests that say who answered: each endpoint carries a tag, a TCP endpoint
// replies "<tag> <original destination>" (from SO_ORIGINAL_DST / IP6T_SO_ORIGINAL_DST) and
// closes, a UDP endpoint replies "<tag>" to each datagram. A proxy listener stand-in and the
// "real" destination behind it are both tagged servers, so a client's one line shows where its
// connection landed and what the kernel recorded as its original destination.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"

namespace leash::testing {

// "192.0.2.11:443" or "[2001:db8::11]:443": the original destination of an accepted TCP
// connection, or "none" when the kernel has none to report.
std::string OriginalDestination(int fd);

class TaggedServer {
 public:
  struct Endpoint {
    std::string tag;
    std::string address;  // "127.0.0.1", "::1", "192.0.2.11", ...
    uint16_t port = 0;    // 0: the kernel chooses (see port())
    bool udp = false;
  };

  // Binds every endpoint now, in the calling thread's network namespace, and serves them on
  // one background thread until destroyed.
  static absl::StatusOr<std::unique_ptr<TaggedServer>> Start(std::vector<Endpoint> endpoints);
  ~TaggedServer();

  // The bound port of endpoints[index].
  uint16_t port(size_t index) const { return ports_[index]; }

 private:
  TaggedServer() = default;
  void Serve();

  std::vector<Endpoint> endpoints_;
  std::vector<int> fds_;
  std::vector<uint16_t> ports_;
  int stop_fd_ = -1;
  std::thread thread_;
};

}  // namespace leash::testing
