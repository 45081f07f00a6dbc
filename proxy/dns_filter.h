// A subject's DNS filter (network.dns: filter): every DNS question a leashed UID sends to its
// resolvers or to any loopback address reaches the proxy (the nat chain redirects UDP and TCP
// to port 53 of a resolver or of 127.0.0.0/8 and ::1 to the subject's own port, identity by
// port as for its TCP; docs/ARCHITECTURE.md, rule N15). The filter answers only a question
// whose name the subject's network policy could allow (engine::CompiledPolicy::DecideDnsName),
// forwarding it to the subject's resolvers, and answers every other name NXDOMAIN; each
// question writes one decision record under the subject's UID (surface network, the name, why).
//
// What is not a single well-formed question is refused and never forwarded: a message that
// does not parse (FORMERR), one longer than kMaxQueryBytes (REFUSED), a response sent as a
// query, an opcode other than QUERY (NOTIMP), two or more questions (FORMERR: a second name
// would otherwise ride along unjudged), a class other than IN (REFUSED). Fewer than 12 bytes get
// no answer at all (there is no id to answer), and are logged.
//
// A forwarded question goes over the transport the agent used (UDP, or TCP for TCP DNS), to
// each resolver in turn until one answers within the per-attempt timeout; no resolver
// answering is SERVFAIL. The answer must parse and match the question (id, name, type, class),
// or it counts as that resolver's failure. A UDP answer longer than the agent can take (512
// bytes, or its EDNS0 payload size) goes back truncated (TC set, header and question only),
// so the agent asks again over TCP. The A/AAAA addresses of each answer are kept in the
// DnsAnswerCache for the proxy's own resolve-then-connect.
//
// Loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "engine/compiled_policy.h"
#include "proxy/dns_answer_cache.h"
#include "proxy/dns_message.h"
#include "proxy/proxy_context.h"
#include "proxy/socket_address.h"

namespace leash::proxy {

// No DNS query is this long (one question of at most 255 bytes and an OPT record): longer is
// refused as oversized, never parsed further or forwarded.
inline constexpr size_t kMaxDnsQueryBytes = 1232;

// Who asked, as the listener the question arrived on knows it.
struct DnsAsker {
  uint32_t uid = 0;
  // Null: the subject has no policy; every question is refused (REFUSED) and logged critical.
  std::shared_ptr<const engine::CompiledPolicy> policy;
  std::string no_policy_reason;
  std::vector<engine::IpAddress> resolvers;
  bool tcp = false;
};

// Called at most once with the message to send back (without TCP's length prefix).
using DnsReplyFn = std::function<void(std::string reply)>;

struct DnsFilterOptions {
  // How long one resolver has to answer before the next is tried.
  absl::Duration attempt_timeout = absl::Seconds(2);
  // UDP sockets per resolver.
  size_t upstream_sockets = 8;
  // Questions one subject may have at its resolvers at once; more are answered REFUSED.
  size_t max_in_flight_per_subject = 256;
  // An answer's addresses are kept at least this long for the proxy's own connect, whatever the
  // TTL (a TTL of 0 is the usual tool of DNS rebinding: the agent connects a moment after asking),
  // and at most max_cache_ttl.
  absl::Duration min_cache_ttl = absl::Seconds(10);
  absl::Duration max_cache_ttl = absl::Hours(1);
};

class DnsFilter {
 public:
  DnsFilter(ProxyContext* context, DnsAnswerCache* cache, DnsFilterOptions options = {});
  // Ends every exchange without a reply.
  ~DnsFilter();

  // Judges the DNS message `query` from `asker` and, now or later, calls `reply` (see the file
  // comment for what is answered how). Loop thread.
  void Handle(const DnsAsker& asker, absl::string_view query, DnsReplyFn reply);

  // Ends every exchange without a reply (shutdown). Loop thread.
  void CancelAll();

  size_t in_flight(uint32_t uid) const;

 private:
  class Exchange;
  friend class Exchange;
  struct Upstream;
  // One of the long-lived UDP sockets to `resolver` (made on first use), chosen at random.
  Upstream* UpstreamFor(const SocketAddress& resolver);
  void ReadUpstream(Upstream* upstream);
  // Refuses `query` with `rcode` (a header-only reply when it has no parsed question) and logs
  // a block under `uid` with `reason`.
  void Refuse(uint32_t uid, absl::string_view query, const dns::Message* parsed, dns::Rcode rcode,
              const std::string& name, const std::string& reason, bool critical,
              const DnsReplyFn& reply);
  void Finished(Exchange* exchange);

  ProxyContext* const context_;
  DnsAnswerCache* const cache_;
  const DnsFilterOptions options_;
  absl::flat_hash_set<Exchange*> exchanges_;
  // Per resolver, the UDP sockets questions go out on. Long-lived, and not one per question: a
  // closed socket's port would still carry its conntrack entry (30 s for UDP) while the kernel
  // hands the port to the next socket that asks — an agent's, whose DNS to that resolver would
  // then match the proxy's old entry instead of meeting the redirect, and be dropped. Bound and
  // open, the ports are never an agent's. Each question gets an id of the filter's own, unique
  // on its socket, and the answer gets the agent's id back.
  absl::flat_hash_map<SocketAddress, std::vector<std::unique_ptr<Upstream>>> upstreams_;
  absl::flat_hash_map<uint32_t, size_t> in_flight_;
};

}  // namespace leash::proxy
