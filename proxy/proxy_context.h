// What every connection of one event loop shares: the loop, the kernel/resolver interfaces,
// the decision sink, the options, a pool of empty pipes and the counters. Loop thread only,
// except the atomic counters (read by the heartbeat).
#pragma once

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "absl/time/time.h"
#include "engine/decision_record.h"
#include "proto/sidecar/would_be_blocks.h"
#include "proxy/event_loop.h"
#include "proxy/held_port_sockets.h"
#include "proxy/host_addresses.h"
#include "proxy/route_lookup.h"
#include "proxy/original_dst.h"
#include "proxy/resolver.h"

namespace leash::proxy {

class Connection;
class DnsAnswerCache;
class DnsTcpSession;

struct ProxyOptions {
  // How long a new connection may send nothing before it is decided on its address alone
  // (server-speaks-first protocols such as SSH or SMTP then wait this long once).
  absl::Duration peek_timeout = absl::Seconds(1);
  // Resolving a name and connecting upstream, together.
  absl::Duration connect_timeout = absl::Seconds(10);
  // Connections held at once; more are refused (reset) and logged.
  size_t max_connections = 200000;
  // Connections one subject may hold at once, so that one agent cannot take the descriptors
  // (about half the descriptor limit, in connections) every other agent needs; more are
  // refused and logged under it.
  size_t max_connections_per_subject = 4096;
  // Pipe capacity for splice (F_SETPIPE_SZ); 0 keeps the kernel default (64 KiB).
  int pipe_size = 0;
  // Where listeners bind (the redirect targets for locally generated traffic).
  std::string ipv4_address = "127.0.0.1";
  std::string ipv6_address = "::1";
  // leashd's sockets for the listeners (null: the proxy binds its own, as in a run without
  // leashd). With them, a port leashd does not hold is a failed listener.
  std::shared_ptr<const HeldPortSockets> held_ports;
  // The destination guard (proxy/destination_guard.h): a connection decided on a name never
  // goes to loopback, link-local, metadata, private, shared, unspecified, multicast or reserved
  // addresses, nor to this host's own, unless an IP/CIDR allow entry of the subject names the
  // address. Off only in unit tests whose upstreams stand on loopback.
  bool guard_name_destinations = true;
  // This host's interface addresses, for the guard (loop thread only). Without it the guard
  // cannot check a destination against them, and refuses under fail_mode: closed.
  std::shared_ptr<HostAddresses> host_addresses;
  // The kernel's routes, for the guard (loop thread only): an address routed to this host (a
  // `local` route such as AnyIP's, broadcast, anycast) is this host's own too. Without it, or
  // when a lookup fails, the guard refuses under fail_mode: closed.
  std::shared_ptr<RouteLookup> routes;
  // DNS over TCP: a connection with no query in flight closes after this long without one.
  absl::Duration dns_tcp_idle_timeout = absl::Seconds(10);
  // Unit tests: a subject on port 0 gets a kernel-chosen port. leashd never sends port 0, and
  // without this it is refused as a bad port.
  bool allow_port_zero = false;
};

struct ProxyCounters {
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> decided{0};   // decision records written (allow + block)
  std::atomic<uint64_t> allowed{0};
  std::atomic<uint64_t> refused{0};   // blocks of every kind
  std::atomic<uint64_t> audited{0};   // blocks on an audited network, let through (not refused)
  std::atomic<uint64_t> active{0};    // connections held now
  std::atomic<uint64_t> outcomes{0};  // outcome records: allowed connections the upstream failed
  // `audited` per subject UID, for `leash status` (carried on the heartbeat).
  sidecar::WouldBeBlockCounter would_be_blocks;
};

struct ProxyContext {
  EventLoop* loop = nullptr;
  const OriginalDstReader* original_dst = nullptr;
  Resolver* resolver = nullptr;
  engine::DecisionSink* sink = nullptr;
  ProxyOptions options;
  ProxyCounters counters;

  // Loop thread only from here.
  absl::BitGen rng;
  // MSG_PEEK lands here; no connection keeps peeked bytes of its own.
  std::unique_ptr<char[]> scratch;
  // Empty pipes, reused so a connection holds a pipe only while bytes are in flight.
  std::vector<std::pair<int, int>> free_pipes;
  size_t max_free_pipes = 256;
  size_t pipe_capacity = 65536;
  // Connections held now, per subject (UID).
  absl::flat_hash_map<uint32_t, size_t> active_by_uid;
  // Every open connection (intrusive list through Connection), so a shutdown can close them.
  Connection* connections = nullptr;
  // A spare descriptor closed to accept-and-reset when the process runs out of descriptors.
  int reserve_fd = -1;
  // The addresses each subject's DNS filter handed out: a connection allowed on a name goes to
  // these while they last (null: none kept).
  DnsAnswerCache* dns_answers = nullptr;
  // DNS-over-TCP sessions open now, so a shutdown can close them.
  absl::flat_hash_set<DnsTcpSession*> dns_sessions;
};

// Writes one record (answer first, log after: callers reset or connect before calling this).
// `account`: the uid's account when the caller knows it (the owner of a direct connection);
// empty lets the log name it from its subjects (AsyncDecisionLog::AccountOf).
void LogDecision(ProxyContext* context, uint32_t uid, const engine::Decision& decision,
                 leash::v1::Subject subject, const std::string& ref, bool critical,
                 const std::string& account = "");

// What became of an allowed connection that did not end normally (DecisionRecord.outcome).
enum class Outcome : uint8_t {
  kRefused,      // the upstream refused the connection (ECONNREFUSED)
  kUnreachable,  // no route, host unreachable, or the socket could not be made
  kTimedOut,     // no answer from the upstream within the connect timeout
  kReset,        // the upstream reset (or vanished) mid-stream
  kProxyError,   // the proxy could not carry it on (a descriptor, a pipe, epoll)
  kProxyStopped, // leash-proxy shut down with the connection open
};
absl::string_view OutcomeName(Outcome outcome);

// Writes the outcome record of the allowed connection `ref` (after its allow record, under the
// same ref, uid and subject): action "outcome", `outcome` named, `reason` saying what happened.
// Callers have already answered the client.
void LogOutcome(ProxyContext* context, uint32_t uid, const std::string& ref,
                leash::v1::Subject subject, Outcome outcome, const std::string& reason);

// A fresh ref for a decision.
std::string NewRef(ProxyContext* context);

// Closes `fd` with a reset (SO_LINGER 0): a network block (docs/ARCHITECTURE.md, rule N9).
void ResetAndClose(int fd);

}  // namespace leash::proxy
