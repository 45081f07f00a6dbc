// DNS over TCP (RFC 7766) from a leashed UID to one of its resolvers, redirected into its
// proxy listener: each length-prefixed query goes through the subject's DnsFilter like a UDP
// one, and each answer goes back length-prefixed as it comes (answers carry their query's id, so
// pipelined queries may be answered out of order). At most kMaxDnsInFlightPerSession queries of
// one connection are at the resolvers at once: reading pauses until one is answered. A length
// prefix longer than any query is answered REFUSED and the connection closed (the bytes that
// follow cannot be trusted to frame anything); so is one idle for the idle timeout. Loop thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "proxy/dns_filter.h"
#include "proxy/event_loop.h"
#include "proxy/proxy_context.h"

namespace leash::proxy {

inline constexpr size_t kMaxDnsInFlightPerSession = 16;

class DnsTcpSession final : public EventLoop::Handler,
                            public EventLoop::TimerTarget,
                            public EventLoop::Deletable {
 public:
  // Takes `fd` (accepted, non-blocking). Counts as one of the subject's connections.
  static void Start(ProxyContext* context, DnsFilter* filter, int fd, DnsAsker asker,
                    absl::Duration idle_timeout);

  // Closes every open session of `context` (shutdown).
  static void CloseAll(ProxyContext* context);

  ~DnsTcpSession() override;

  void OnEvents(uint32_t events, unsigned tag) override;
  void OnTimer() override;

 private:
  DnsTcpSession(ProxyContext* context, DnsFilter* filter, int fd, DnsAsker asker,
                absl::Duration idle_timeout);
  void ReadQueries();
  void ReadQueriesOnce();
  void Send(std::string message);
  void Flush();
  void UpdateInterest();
  void Close();

  ProxyContext* const context_;
  DnsFilter* const filter_;
  int fd_;
  const DnsAsker asker_;
  const absl::Duration idle_timeout_;
  EventLoop::TimerHandle timer_;
  std::string in_;
  std::string out_;
  size_t in_flight_ = 0;
  bool peer_done_ = false;      // EOF from the agent
  bool close_after_flush_ = false;
  bool closed_ = false;
  bool reading_ = false;
  // Lets a reply that arrives after the session closed find it gone.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace leash::proxy
