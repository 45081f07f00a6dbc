// The proxy's listeners, one per subject UID, kept in step with the UID -> policy map leashd
// sends over PolicyStream (docs/ARCHITECTURE.md, rule N3): each listener sits on its UID's own
// proxy port and carries only that subject's resolved policy, so the port a connection arrives
// on is what identifies the subject.
//
// Apply() is the PolicySubscriber's ApplyFn: it opens a listener (127.0.0.1 and ::1) for each
// new UID — on leashd's inherited socket of that port when ProxyOptions::held_ports is set (as
// leashd always runs it; see proxy/held_port_sockets.h), else by binding one itself — leaves
// existing listeners and their connections untouched, swaps each listener's policy, and acks
// with the UIDs whose listener would not bind. A UID with a listener but no policy — sent as
// no_policy, or gone from the map — keeps its listener and refuses every connection, logged
// under its own UID.
//
// Each listener also has a UDP socket on its port (127.0.0.1 and ::1; leashd's, like the TCP
// ones): the subject's DNS filter (proxy/dns_filter.h), where the nat chain redirects its DNS to
// the resolvers. A TCP connection whose original destination is port 53 of one of the subject's
// resolvers, under network.dns: filter, is DNS over TCP for the same filter
// (proxy/dns_tcp_session.h), judged per question, not as a connection.
//
// Before any policy is consulted, a connection is refused (critical, no policy) when its
// original destination cannot be read or is the accepting listener's own address (it was not
// redirected: a direct connection, logged under the account that owns the connecting socket,
// never the listener's subject), or is the address of any listener of this proxy (one agent
// aiming at another's port: the kernel redirected it to its own listener, where it is refused
// and logged under the attempting UID).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "proto/policystream/subject_map.h"
#include "engine/decision_record.h"
#include "leash/v1/policy_stream.pb.h"
#include "proxy/dns_answer_cache.h"
#include "proxy/dns_filter.h"
#include "proxy/event_loop.h"
#include "proxy/original_dst.h"
#include "proxy/proxy_context.h"
#include "proxy/resolver.h"
#include "proxy/socket_address.h"
#include "proxy/socket_owner.h"

namespace leash::proxy {

class ListenerManager {
 public:
  // Every pointer must outlive the manager; `sink` may be null (nothing logged).
  ListenerManager(EventLoop* loop, const OriginalDstReader* original_dst,
                  const SocketOwnerLookup* socket_owner, Resolver* resolver,
                  engine::DecisionSink* sink, ProxyOptions options);
  // Shutdown() must have run.
  ~ListenerManager();

  // Puts `map` in force and returns the ack for `version`: failed_uids and error name each UID
  // whose listener would not bind (that UID is refused until a later map binds it). Runs on
  // the event loop (it must be running); returns once the map is in force. Thread-safe.
  leash::v1::PolicyAck Apply(policystream::SubjectMapPtr map, uint64_t version);

  // Closes every listener and connection. Thread-safe; the loop must be running.
  void Shutdown();

  // The addresses `uid`'s listener is bound to (empty if none). Thread-safe.
  std::vector<SocketAddress> ListenerAddresses(uint32_t uid);

  const ProxyCounters& counters() const { return context_.counters; }

 private:
  struct Listener;
  void ApplyOnLoop(const policystream::SubjectMapPtr& map, uint64_t version,
                   leash::v1::PolicyAck* ack);
  void Accept(Listener* listener, unsigned tag);
  // The DNS filter's datagrams on `listener`'s UDP socket of `family_tag` (0: IPv4, 1: IPv6).
  void ReadDatagrams(Listener* listener, unsigned family_tag);
  // Who a question on `listener` comes from: its subject, policy and resolvers (no policy when
  // the listener is not fully in force or the subject has none).
  static DnsAsker AskerOf(const Listener& listener);
  // Whether a TCP connection to `ip`:53 is DNS for the subject's filter: network.dns is filter
  // and `ip` is one of its resolvers or a loopback address (the nat chain sends DNS to every
  // loopback address to the filter: a local resolver answers on more than resolv.conf names).
  static bool IsDnsFilterDestination(const policystream::SubjectEntry& entry,
                                     const engine::IpAddress& ip);
  void Handle(Listener* listener, unsigned tag, int fd);
  // `account`: the uid's, when known here (a direct connection's owner); empty lets the log
  // name it.
  void RefuseCritical(int fd, uint32_t uid, const std::string& reason,
                      const SocketAddress* original_dst, const std::string& account = "");
  // A connection that was not redirected: refused, and logged under the owner of the socket
  // that made it (or kUnknownUid, saying so), with `listener`'s subject named in the reason.
  void RefuseDirect(int fd, const Listener& listener, const std::string& what,
                    const SocketAddress* original_dst);
  // Stops watching the listener's sockets and closes the proxy's own (leashd's stay open).
  void CloseListener(Listener* listener);
  // A port that moved away: leashd's sockets of the old port go to a listener of their own
  // that refuses every connection, until a map hands that port out again (TakeBackRetired).
  void RetireHeldSockets(Listener* listener, uint16_t new_port);
  void TakeBackRetired(uint16_t port);

  ProxyContext context_;
  const SocketOwnerLookup* const socket_owner_;
  // The DNS filter of every subject, and the answers it gave (declared after context_, which
  // points at the cache; destroyed before it).
  DnsAnswerCache dns_answers_;
  std::unique_ptr<DnsFilter> dns_filter_;
  std::unique_ptr<char[]> datagram_;
  // Loop thread only.
  absl::flat_hash_map<uint32_t, std::unique_ptr<Listener>> listeners_;
  std::vector<std::unique_ptr<Listener>> retired_;
  // Every address a listener of this proxy is bound to, and whose it is.
  absl::flat_hash_map<SocketAddress, uint32_t> listener_addresses_;
  bool ipv6_unavailable_reported_ = false;
};

}  // namespace leash::proxy
