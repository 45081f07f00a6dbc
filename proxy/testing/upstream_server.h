// A real TCP server for proxy tests and benchmarks: greets each connection with
// "SERVER <its own address>\n" (so a test sees exactly which host a connection reached), then
// echoes what it reads until EOF and closes its side — or, as a server that fails mid-stream,
// resets the connection once the client's first bytes arrive. One thread per connection (test
// code).
#pragma once

#include <atomic>
#include <thread>
#include <vector>

#include "proxy/socket_address.h"

namespace leash::proxy::testing {

class UpstreamServer {
 public:
  enum class Behaviour { kEcho, kResetAfterFirstBytes };
  // Binds `address` (port 0: kernel-chosen) in the calling thread's network namespace.
  explicit UpstreamServer(const SocketAddress& address, Behaviour behaviour = Behaviour::kEcho);
  ~UpstreamServer();

  bool ok() const { return ok_; }
  const SocketAddress& address() const { return address_; }
  // Connections accepted so far.
  int accepted() const { return accepted_.load(); }
  // The first line a client should read from this server.
  std::string Greeting() const;

 private:
  void AcceptLoop();
  void Serve(int fd);

  int fd_ = -1;
  const Behaviour behaviour_;
  bool ok_ = false;
  SocketAddress address_;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::thread thread_;
  std::vector<std::thread> connections_;
};

}  // namespace leash::proxy::testing
