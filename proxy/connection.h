// One redirected connection, from its first bytes to its close, on the event loop:
// peek (MSG_PEEK: the bytes stay queued and are spliced upstream untouched) -> decide ->
// [resolve the name itself] -> connect -> splice both directions through pipes, with
// half-close carried across. A block is a reset. Each connection writes exactly one decision.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/compiled_policy.h"
#include "proxy/event_loop.h"
#include "proxy/peek.h"
#include "proxy/proxy_context.h"
#include "proxy/resolver.h"
#include "proxy/socket_address.h"

namespace leash::proxy {

class Connection final : public EventLoop::Handler,
                         public EventLoop::TimerTarget,
                         public EventLoop::Deletable,
                         public ResolveWaiter {
 public:
  // Takes `client_fd` (accepted, non-blocking). `policy` is the subject's policy at accept
  // time (non-null: callers refuse no-policy subjects before this). Loop thread.
  static void Start(ProxyContext* context, int client_fd, uint32_t uid,
                    std::shared_ptr<const engine::CompiledPolicy> policy,
                    const SocketAddress& original_dst);

  ~Connection() override;

  // Closes every open connection of `context` (shutdown). Loop thread.
  static void CloseAll(ProxyContext* context);

  void OnEvents(uint32_t events, unsigned tag) override;
  void OnTimer() override;
  void OnResolved(const ResolveResult& result) override;

 private:
  enum class State : uint8_t { kPeeking, kResolving, kConnecting, kSplicing, kClosed };

  // From the decision until the upstream connection is up; freed after.
  struct Pending {
    std::string name;  // the normalized name being resolved (domain decisions)
    engine::Decision decision;
    leash::v1::Subject subject;
    std::string ref;
    bool logged = false;
    std::vector<SocketAddress> targets;
    size_t next_target = 0;
  };

  // One direction of the splice: src -> pipe -> dst.
  struct Direction {
    int pipe_read = -1;
    int pipe_write = -1;
    uint32_t in_pipe = 0;
    bool eof = false;       // src said EOF
    bool shut = false;      // EOF passed on (shutdown(dst, SHUT_WR))
  };

  Connection(ProxyContext* context, int client_fd, uint32_t uid,
             std::shared_ptr<const engine::CompiledPolicy> policy, const SocketAddress& original_dst);

  void Peek(bool final, bool timed_out);
  void Decide(const PeekResult& peek, bool timed_out);
  void ConnectNext();
  void OnConnected();
  void StartSplicing();
  // False when the connection closed during the pump.
  bool Pump(Direction& direction, int src, int dst);
  bool AcquirePipe(Direction& direction);
  void ReleasePipe(Direction& direction);
  void Block(engine::Decision decision, leash::v1::Subject subject, std::string ref);
  void LogPendingOnce();
  // Normal end (both directions finished) or abort (reset both sides).
  void Close(bool reset);

  ProxyContext* const context_;
  Connection* prev_ = nullptr;  // context_->connections list
  Connection* next_ = nullptr;
  EventLoop::TimerHandle timer_;
  int client_fd_;
  int upstream_fd_ = -1;
  uint32_t uid_;
  State state_ = State::kPeeking;
  SocketAddress original_dst_;
  std::shared_ptr<const engine::CompiledPolicy> policy_;  // released once decided
  std::unique_ptr<Pending> pending_;
  Direction to_upstream_;
  Direction to_client_;
};

}  // namespace leash::proxy
