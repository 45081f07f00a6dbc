// One redirected connection, from its first bytes to its close, on the event loop:
// peek (MSG_PEEK: the bytes stay queued and are spliced upstream untouched) -> decide ->
// [the addresses the subject's DNS filter gave the agent for the name, else resolve the name
// itself] -> connect -> splice both directions through pipes, with
// half-close carried across. A block is a reset. Each connection writes exactly one decision;
// an allowed one that the upstream fails (refused, unreachable, timed out, reset mid-stream)
// or the proxy cannot carry on also writes one outcome record under the same ref, after it, so
// the log never shows only "allow" for a connection the agent saw reset.
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
    // The addresses came from what the subject's DNS filter answered the agent.
    bool from_dns_filter = false;
    engine::Decision decision;
    leash::v1::Subject subject;
    bool logged = false;
    std::vector<SocketAddress> targets;
    size_t next_target = 0;
    // Each address that did not take the connection, and why; the last one's kind.
    std::vector<std::string> failed_attempts;
    Outcome last_failure = Outcome::kUnreachable;
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
  // The upstream address being connected to now did not take the connection (`error`: errno).
  void NoteFailedAttempt(int error, const std::string& detail);
  // An allowed connection that cannot go on: reset (the answer first), then the allow record
  // if it is not written yet, then its outcome record.
  void FailAllowed(Outcome outcome, const std::string& reason);
  // Pump's error path: `fd`'s side failed with `error`. Only a failure on the upstream side is
  // an outcome to write down; the client's own reset is the agent's doing.
  void FailSplice(int fd, int error);
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
  // The decision's ref and the name it was judged on (empty: none), kept past the decision for
  // an outcome record.
  std::string ref_;
  std::string domain_;
  SocketAddress upstream_address_;  // where the splice goes, once connected
  std::shared_ptr<const engine::CompiledPolicy> policy_;  // released once decided
  std::unique_ptr<Pending> pending_;
  Direction to_upstream_;
  Direction to_client_;
};

}  // namespace leash::proxy
