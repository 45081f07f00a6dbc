#include "proxy/listener_manager.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/reserved_ports.h"
#include "proxy/connection.h"
#include "proxy/dns_tcp_session.h"
#include "proxy/peek_limits.h"

namespace leash::proxy {
namespace {

constexpr unsigned kV4Tag = 0;
constexpr unsigned kV6Tag = 1;
// The DNS filter's UDP sockets: kV4Tag/kV6Tag + kUdpTagOffset.
constexpr unsigned kUdpTagOffset = 2;
constexpr int kDatagramsPerWake = 64;
constexpr uint16_t kDnsPort = 53;
constexpr int kBacklog = 4096;
constexpr int kAcceptsPerWake = 64;

struct BindResult {
  int fd = -1;
  SocketAddress address;
  absl::Status status;
  bool unavailable = false;  // the address family/address does not exist on this host
  bool held = false;         // leashd's socket: never closed here, and it outlives this proxy
};

BindResult BindListener(const std::string& ip_text, uint16_t port, bool udp = false) {
  BindResult result;
  std::optional<engine::IpAddress> ip = engine::ParseIpAddress(ip_text);
  if (!ip) {
    result.status = absl::InvalidArgumentError(absl::StrCat("bad listen address ", ip_text));
    return result;
  }
  SocketAddress wanted{*ip, port};
  const int fd =
      socket(Family(wanted), (udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    result.unavailable = errno == EAFNOSUPPORT;
    result.status = absl::ErrnoToStatus(errno, absl::StrCat("socket for ", FormatSocketAddress(wanted)));
    return result;
  }
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (Family(wanted) == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  sockaddr_storage storage;
  const socklen_t length = ToSockaddr(wanted, &storage);
  if (bind(fd, reinterpret_cast<sockaddr*>(&storage), length) != 0 ||
      (!udp && listen(fd, kBacklog) != 0)) {
    const int error = errno;
    close(fd);
    result.unavailable = error == EADDRNOTAVAIL && Family(wanted) == AF_INET6;
    result.status = absl::ErrnoToStatus(
        error, absl::StrCat("cannot ", udp ? "bind UDP " : "listen on ", FormatSocketAddress(wanted),
                            error == EADDRINUSE
                                ? " (another process holds the port; `ss -ltnup` shows which)"
                                : ""));
    return result;
  }
  absl::StatusOr<SocketAddress> bound = LocalAddressOf(fd);
  if (!bound.ok()) {
    close(fd);
    result.status = bound.status();
    return result;
  }
  result.address = *bound;
  result.fd = fd;
  return result;
}

// The listener of `port` on leashd's inherited socket: listen() on it (again, after a respawn:
// it is listening already, and what queued meanwhile is accepted now). A port leashd does not
// hold is a failure, never a bind of our own.
BindResult ListenHeld(const HeldPortSockets& held, bool v6, const std::string& ip_text,
                      uint16_t port, bool udp = false) {
  BindResult result;
  if (v6 && !held.ipv6_available) {
    result.unavailable = true;
    result.status = absl::UnavailableError(absl::StrCat(ip_text, " does not exist on this host"));
    return result;
  }
  const absl::flat_hash_map<uint16_t, int>& table =
      udp ? (v6 ? held.udp_ipv6 : held.udp_ipv4) : (v6 ? held.ipv6 : held.ipv4);
  auto it = table.find(port);
  const std::string where =
      v6 ? absl::StrCat("[", ip_text, "]:", port) : absl::StrCat(ip_text, ":", port);
  if (it == table.end()) {
    result.status = absl::FailedPreconditionError(absl::StrCat(
        "leashd holds no ", udp ? "UDP" : "TCP", " socket for ", where,
        ": another process bound that port while leashd was not running (`ss -ltnp 'sport = :",
        port, "'` shows which); leashd takes it back on the first reconcile after that process lets go"));
    return result;
  }
  if (!udp && listen(it->second, kBacklog) != 0) {
    result.status =
        absl::ErrnoToStatus(errno, absl::StrCat("cannot listen on leashd's socket for ", where));
    return result;
  }
  absl::StatusOr<SocketAddress> bound = LocalAddressOf(it->second);
  if (!bound.ok()) {
    result.status = bound.status();
    return result;
  }
  result.address = *bound;
  result.fd = it->second;
  result.held = true;
  return result;
}

}  // namespace

struct ListenerManager::Listener final : public EventLoop::Handler, public EventLoop::Deletable {
  struct Socket {
    int fd = -1;
    SocketAddress address;
    bool held = false;  // leashd's
  };
  ListenerManager* manager = nullptr;
  uint32_t uid = 0;
  uint16_t port = 0;
  Socket sockets[2];  // [kV4Tag], [kV6Tag]
  // The DNS filter's UDP sockets on the same port. `reply_fd` is what a late answer sends from:
  // -1 once the socket is closed or taken away.
  Socket udp[2];
  std::shared_ptr<int> reply_fd[2] = {std::make_shared<int>(-1), std::make_shared<int>(-1)};
  bool v6_unavailable = false;
  // The map in force and this UID's entry in it (null: not in the map).
  policystream::SubjectMapPtr map;
  const policystream::SubjectEntry* entry = nullptr;
  // Non-empty: the listener could not be put fully in force; every connection is refused.
  std::string failure;

  void OnEvents(uint32_t /*events*/, unsigned tag) override {
    if (tag >= kUdpTagOffset) {
      manager->ReadDatagrams(this, tag - kUdpTagOffset);
    } else {
      manager->Accept(this, tag);
    }
  }
};

ListenerManager::ListenerManager(EventLoop* loop, const OriginalDstReader* original_dst,
                                 const SocketOwnerLookup* socket_owner, Resolver* resolver,
                                 engine::DecisionSink* sink, ProxyOptions options)
    : socket_owner_(socket_owner) {
  // splice(2) has no MSG_NOSIGNAL: a peer that vanished mid-splice must be an EPIPE to handle,
  // not a SIGPIPE that ends the process. Process-wide, so set once here for every user.
  signal(SIGPIPE, SIG_IGN);
  context_.loop = loop;
  context_.original_dst = original_dst;
  context_.resolver = resolver;
  context_.sink = sink;
  context_.options = std::move(options);
  context_.scratch = std::make_unique<char[]>(kMaxPeekBytes);
  context_.reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  context_.dns_answers = &dns_answers_;
  dns_filter_ = std::make_unique<DnsFilter>(&context_, &dns_answers_);
  datagram_ = std::make_unique<char[]>(dns::kMaxMessageBytes);
  int fds[2];
  if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0) {
    if (context_.options.pipe_size > 0) fcntl(fds[1], F_SETPIPE_SZ, context_.options.pipe_size);
    const int capacity = fcntl(fds[1], F_GETPIPE_SZ);
    if (capacity > 0) context_.pipe_capacity = static_cast<size_t>(capacity);
    context_.free_pipes.emplace_back(fds[0], fds[1]);
  }
}

ListenerManager::~ListenerManager() {
  for (auto& [read_fd, write_fd] : context_.free_pipes) {
    close(read_fd);
    close(write_fd);
  }
  if (context_.reserve_fd >= 0) close(context_.reserve_fd);
}

leash::v1::PolicyAck ListenerManager::Apply(policystream::SubjectMapPtr map, uint64_t version) {
  leash::v1::PolicyAck ack;
  context_.loop->RunSync([&] { ApplyOnLoop(map, version, &ack); });
  return ack;
}

void ListenerManager::ApplyOnLoop(const policystream::SubjectMapPtr& map, uint64_t version,
                                  leash::v1::PolicyAck* ack) {
  ack->set_version(version);
  std::vector<std::pair<uint32_t, std::string>> failures;
  for (const auto& [uid, entry] : *map) {
    std::unique_ptr<Listener>& slot = listeners_[uid];
    if (slot == nullptr) {
      slot = std::make_unique<Listener>();
      slot->manager = this;
      slot->uid = uid;
      slot->port = entry.port;
    }
    Listener& listener = *slot;
    if (listener.port != entry.port) {
      // A port is an account's for its life; a new one means ports.json changed under us.
      // Move: the new port's listener, the old one closed (its connections carry on).
      RetireHeldSockets(&listener, entry.port);
      CloseListener(&listener);
      listener.port = entry.port;
    }
    listener.map = map;
    listener.entry = &entry;
    std::vector<std::string> errors;
    if (entry.port == 0 && !context_.options.allow_port_zero) {
      errors.push_back("port 0 is not a proxy port (ports.json gave this account none)");
    } else {
      const std::string* addresses[2] = {&context_.options.ipv4_address,
                                         &context_.options.ipv6_address};
      if (context_.options.held_ports) TakeBackRetired(listener.port);
      for (unsigned tag : {kV4Tag, kV6Tag}) {
        Listener::Socket& socket = listener.sockets[tag];
        if (socket.fd >= 0 || (tag == kV6Tag && listener.v6_unavailable)) continue;
        BindResult bound =
            context_.options.held_ports
                ? ListenHeld(*context_.options.held_ports, tag == kV6Tag, *addresses[tag],
                             listener.port)
                : BindListener(*addresses[tag], listener.port);
        if (bound.unavailable) {
          // No IPv6 on this host: no ::1 to bind, and no IPv6 traffic to redirect either.
          listener.v6_unavailable = true;
          if (!ipv6_unavailable_reported_) {
            ipv6_unavailable_reported_ = true;
            std::cerr << "leash-proxy: IPv6 is not available here (" << bound.status.message()
                      << "); listeners are IPv4 only\n";
          }
          continue;
        }
        if (!bound.status.ok()) {
          errors.push_back(std::string(bound.status.message()));
          continue;
        }
        if (absl::Status added = context_.loop->Add(bound.fd, EPOLLIN, &listener, tag);
            !added.ok()) {
          if (!bound.held) close(bound.fd);
          errors.push_back(std::string(added.message()));
          continue;
        }
        socket.fd = bound.fd;
        socket.address = bound.address;
        socket.held = bound.held;
      }
      for (unsigned tag : {kV4Tag, kV6Tag}) {
        Listener::Socket& socket = listener.udp[tag];
        if (socket.fd >= 0 || (tag == kV6Tag && listener.v6_unavailable)) continue;
        BindResult bound =
            context_.options.held_ports
                ? ListenHeld(*context_.options.held_ports, tag == kV6Tag, *addresses[tag],
                             listener.port, /*udp=*/true)
                : BindListener(*addresses[tag], listener.port, /*udp=*/true);
        if (bound.unavailable) continue;
        if (!bound.status.ok()) {
          errors.push_back(absl::StrCat("DNS filter: ", bound.status.message()));
          continue;
        }
        if (absl::Status added =
                context_.loop->Add(bound.fd, EPOLLIN, &listener, tag + kUdpTagOffset);
            !added.ok()) {
          if (!bound.held) close(bound.fd);
          errors.push_back(std::string(added.message()));
          continue;
        }
        socket.fd = bound.fd;
        socket.address = bound.address;
        socket.held = bound.held;
        listener.reply_fd[tag] = std::make_shared<int>(bound.fd);
      }
    }
    listener.failure = absl::StrJoin(errors, "; ");
    if (!errors.empty()) failures.emplace_back(uid, listener.failure);
  }
  for (auto& [uid, listener] : listeners_) {
    if (map->find(uid) == map->end()) {
      // leashd never drops a subject (it sends no_policy), but a map without it still means
      // it has no policy here: refuse, never fall back to anything.
      listener->map = map;
      listener->entry = nullptr;
    }
  }
  listener_addresses_.clear();
  for (const std::unique_ptr<Listener>& retired : retired_) {
    for (const Listener::Socket& socket : retired->sockets) {
      if (socket.fd >= 0) listener_addresses_[socket.address] = retired->uid;
    }
  }
  for (auto& [uid, listener] : listeners_) {
    for (const Listener::Socket& socket : listener->sockets) {
      if (socket.fd >= 0) listener_addresses_[socket.address] = uid;
    }
  }
  std::sort(failures.begin(), failures.end());
  std::vector<std::string> messages;
  for (const auto& [uid, message] : failures) {
    ack->add_failed_uids(uid);
    const policystream::SubjectEntry& entry = map->at(uid);
    messages.push_back(absl::StrCat("uid ", uid, entry.account.empty() ? "" : " (" + entry.account + ")",
                                    ": ", message));
  }
  ack->set_error(absl::StrJoin(messages, "; "));
}

void ListenerManager::RetireHeldSockets(Listener* listener, uint16_t new_port) {
  auto retired = std::make_unique<Listener>();
  retired->manager = this;
  retired->uid = listener->uid;
  retired->port = listener->port;
  retired->failure = absl::StrCat("port ", listener->port, " was this account's and is now ",
                                  new_port, "; a connection still reaching the old one is refused");
  bool any = false;
  for (unsigned tag : {kV4Tag, kV6Tag}) {
    Listener::Socket& socket = listener->sockets[tag];
    if (socket.fd < 0 || !socket.held) continue;
    // Still listening (there is no way to stop a TCP socket listening without unbinding it):
    // what reaches it is accepted and refused here, never left hanging in its queue.
    if (context_.loop->Modify(socket.fd, EPOLLIN, retired.get(), tag).ok()) {
      retired->sockets[tag] = socket;
      any = true;
    } else {
      context_.loop->Remove(socket.fd);
    }
    socket = Listener::Socket();
  }
  if (any) retired_.push_back(std::move(retired));
}

void ListenerManager::TakeBackRetired(uint16_t port) {
  for (auto it = retired_.begin(); it != retired_.end();) {
    if ((*it)->port != port) {
      ++it;
      continue;
    }
    CloseListener(it->get());
    context_.loop->DeleteSoon(it->release());
    it = retired_.erase(it);
  }
}

void ListenerManager::CloseListener(Listener* listener) {
  for (unsigned tag : {kV4Tag, kV6Tag}) {
    Listener::Socket& socket = listener->udp[tag];
    // An answer still on its way is not sent from a descriptor that may be reused.
    *listener->reply_fd[tag] = -1;
    if (socket.fd < 0) continue;
    context_.loop->Remove(socket.fd);
    if (!socket.held) close(socket.fd);
    socket.fd = -1;
  }
  for (Listener::Socket& socket : listener->sockets) {
    if (socket.fd < 0) continue;
    context_.loop->Remove(socket.fd);
    // leashd's socket stays open and listening: what arrives before the next proxy (or before
    // this port's next listener) is queued for it.
    if (!socket.held) close(socket.fd);
    listener_addresses_.erase(socket.address);
    socket.fd = -1;
  }
}

void ListenerManager::Shutdown() {
  context_.loop->RunSync([this] {
    for (std::unique_ptr<Listener>& retired : retired_) {
      CloseListener(retired.get());
      context_.loop->DeleteSoon(retired.release());
    }
    retired_.clear();
    for (auto& [uid, listener] : listeners_) {
      CloseListener(listener.get());
      // An event already fetched for it may still be delivered in this batch.
      context_.loop->DeleteSoon(listener.release());
    }
    listeners_.clear();
    listener_addresses_.clear();
    Connection::CloseAll(&context_);
    DnsTcpSession::CloseAll(&context_);
    dns_filter_->CancelAll();
  });
}

std::vector<SocketAddress> ListenerManager::ListenerAddresses(uint32_t uid) {
  std::vector<SocketAddress> out;
  context_.loop->RunSync([&] {
    auto it = listeners_.find(uid);
    if (it == listeners_.end()) return;
    for (const Listener::Socket& socket : it->second->sockets) {
      if (socket.fd >= 0) out.push_back(socket.address);
    }
  });
  return out;
}

void ListenerManager::Accept(Listener* listener, unsigned tag) {
  const int listen_fd = listener->sockets[tag].fd;
  for (int i = 0; i < kAcceptsPerWake; ++i) {
    const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      context_.counters.accepted.fetch_add(1, std::memory_order_relaxed);
      Handle(listener, tag, fd);
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if ((errno == EMFILE || errno == ENFILE) && context_.reserve_fd >= 0) {
      // Out of descriptors: free the spare, take the connection off the queue, reset it and
      // say so — otherwise it would sit in the backlog and wake the loop forever.
      close(context_.reserve_fd);
      const int dropped = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (dropped >= 0) {
        RefuseCritical(dropped, listener->uid,
                       "the proxy is out of file descriptors; raise its RLIMIT_NOFILE", nullptr);
      }
      context_.reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
      continue;
    }
    return;  // EAGAIN, or an error the next wake will see again
  }
}

void ListenerManager::Handle(Listener* listener, unsigned tag, int fd) {
  const uint32_t uid = listener->uid;
  absl::StatusOr<SocketAddress> original = context_.original_dst->Read(fd);
  if (!original.ok()) {
    RefuseDirect(fd, *listener,
                 absl::StrCat("original destination unreadable (", original.status().message(),
                              "): the connection cannot be shown to have been redirected"),
                 nullptr);
    return;
  }
  const std::string destination = FormatSocketAddress(*original);
  if (*original == listener->sockets[tag].address) {
    RefuseDirect(fd, *listener,
                 absl::StrCat("connection was not redirected: its destination ", destination,
                              " is this listener's own address (a direct connection to the "
                              "proxy)"),
                 &*original);
    return;
  }
  if (auto other = listener_addresses_.find(*original); other != listener_addresses_.end()) {
    RefuseCritical(fd, uid,
                   absl::StrCat("destination ", destination, " is the proxy listener of uid ",
                                other->second,
                                ": one subject aiming at another's listener; refused without "
                                "consulting a policy"),
                   &*original);
    return;
  }
  if (engine::IsReservedLoopbackPort(original->ip, original->port)) {
    // The redirect exempts loopback except this range, so the attempt landed here on the
    // attempting UID's own listener and is refused here, whether or not any listener holds that
    // port: "those 1000 ports on loopback are reserved for Leash".
    RefuseCritical(fd, uid,
                   absl::StrCat("destination ", destination,
                                " is in Leash's reserved loopback port range ",
                                engine::kProxyPortFirst, "-", engine::kProxyPortLast,
                                ", which a leashed UID cannot reach; refused without consulting "
                                "a policy"),
                   &*original);
    return;
  }
  if (auto held = context_.active_by_uid.find(uid);
      held != context_.active_by_uid.end() &&
      held->second >= context_.options.max_connections_per_subject) {
    RefuseCritical(fd, uid,
                   absl::StrCat("uid ", uid, " already holds its maximum of ",
                                context_.options.max_connections_per_subject,
                                " connections through the proxy (each subject's own limit, so "
                                "that one cannot use up the others')"),
                   &*original);
    return;
  }
  if (context_.counters.active.load(std::memory_order_relaxed) >=
      context_.options.max_connections) {
    RefuseCritical(fd, uid,
                   absl::StrCat("the proxy already holds its maximum of ",
                                context_.options.max_connections, " connections"),
                   &*original);
    return;
  }
  if (!listener->failure.empty()) {
    RefuseCritical(fd, uid,
                   absl::StrCat("uid ", uid, "'s listener is not fully in force (",
                                listener->failure, "); every connection is refused"),
                   &*original);
    return;
  }
  if (listener->entry == nullptr || listener->entry->policy == nullptr) {
    const std::string why = listener->entry == nullptr
                                ? "not in the policy map"
                                : (listener->entry->no_policy_reason.empty()
                                       ? "no resolved policy"
                                       : listener->entry->no_policy_reason);
    RefuseCritical(fd, uid,
                   absl::StrCat("uid ", uid, " has no policy (", why,
                                "): every connection on its listener is refused"),
                   &*original);
    return;
  }
  if (original->port == kDnsPort && IsDnsFilterDestination(*listener->entry, original->ip)) {
    DnsTcpSession::Start(&context_, dns_filter_.get(), fd, AskerOf(*listener),
                         context_.options.dns_tcp_idle_timeout);
    return;
  }
  Connection::Start(&context_, fd, uid, listener->entry->policy, *original);
}

bool ListenerManager::IsDnsFilterDestination(const policystream::SubjectEntry& entry,
                                             const engine::IpAddress& ip) {
  if (entry.policy == nullptr ||
      entry.policy->config().network().dns() == leash::v1::DNS_MODE_RESOLVERS) {
    return false;
  }
  const engine::IpAddress unmapped = engine::UnmapV4(ip);
  if (engine::IsLoopbackAddress(unmapped)) return true;
  return std::find(entry.dns_resolvers.begin(), entry.dns_resolvers.end(), unmapped) !=
         entry.dns_resolvers.end();
}

DnsAsker ListenerManager::AskerOf(const Listener& listener) {
  DnsAsker asker;
  asker.uid = listener.uid;
  if (!listener.failure.empty()) {
    asker.no_policy_reason = absl::StrCat("its listener is not fully in force: ", listener.failure);
  } else if (listener.entry == nullptr) {
    asker.no_policy_reason = "not in the policy map";
  } else {
    asker.policy = listener.entry->policy;
    asker.no_policy_reason = listener.entry->no_policy_reason;
    asker.resolvers = listener.entry->dns_resolvers;
  }
  return asker;
}

void ListenerManager::ReadDatagrams(Listener* listener, unsigned family_tag) {
  const int fd = listener->udp[family_tag].fd;
  if (fd < 0) return;
  for (int i = 0; i < kDatagramsPerWake; ++i) {
    sockaddr_storage from{};
    socklen_t from_length = sizeof(from);
    // MSG_TRUNC: the datagram's real length, so an oversized one is judged as what it was.
    const ssize_t n = recvfrom(fd, datagram_.get(), dns::kMaxMessageBytes, MSG_DONTWAIT | MSG_TRUNC,
                               reinterpret_cast<sockaddr*>(&from), &from_length);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // EAGAIN, or an error the next wake will see again
    }
    const size_t length = std::min<size_t>(static_cast<size_t>(n), dns::kMaxMessageBytes);
    std::shared_ptr<int> reply_fd = listener->reply_fd[family_tag];
    dns_filter_->Handle(AskerOf(*listener), absl::string_view(datagram_.get(), length),
                        [reply_fd, from, from_length](std::string reply) {
                          if (*reply_fd < 0) return;
                          sendto(*reply_fd, reply.data(), reply.size(), MSG_DONTWAIT | MSG_NOSIGNAL,
                                 reinterpret_cast<const sockaddr*>(&from), from_length);
                        });
  }
}

void ListenerManager::RefuseDirect(int fd, const Listener& listener, const std::string& what,
                                   const SocketAddress* original_dst) {
  // Asked before the reset: the reset closes the connecting socket too, and a closed socket has
  // no owner left to report. Only this path asks, so a redirected connection never waits on it.
  absl::StatusOr<SocketOwner> owner =
      socket_owner_ != nullptr ? socket_owner_->OwnerOfPeer(fd)
                               : absl::StatusOr<SocketOwner>(
                                     absl::UnavailableError("no socket-owner lookup configured"));
  const std::string aimed_at = absl::StrCat(
      "the proxy listener of uid ", listener.uid,
      listener.entry != nullptr && !listener.entry->account.empty()
          ? absl::StrCat(" (", listener.entry->account, ")")
          : "");
  uint32_t logged_uid = engine::kUnknownUid;
  std::string logged_account;
  std::string made_by;
  if (owner.ok()) {
    logged_uid = owner->uid;
    logged_account = owner->account;
    made_by = absl::StrCat("made by uid ", owner->uid, " (",
                           owner->account.empty() ? "no account has this uid" : owner->account,
                           ")");
  } else {
    // Never the listener's subject: that would record someone else's attempt as its egress.
    made_by = absl::StrCat("made by an unknown owner (", owner.status().message(), ")");
  }
  RefuseCritical(fd, logged_uid,
                 absl::StrCat(what, "; ", made_by, ", aimed at ", aimed_at,
                              "; refused without consulting a policy"),
                 original_dst, logged_account);
}

void ListenerManager::RefuseCritical(int fd, uint32_t uid, const std::string& reason,
                                     const SocketAddress* original_dst,
                                     const std::string& account) {
  ResetAndClose(fd);  // the answer first
  engine::Decision decision;
  decision.verdict = engine::Verdict::kBlock;
  decision.reason = absl::StrCat("network: ", reason);
  leash::v1::Subject subject;
  if (original_dst != nullptr) {
    subject.set_ip(engine::FormatIpAddress(original_dst->ip));
    subject.set_port(original_dst->port);
  }
  LogDecision(&context_, uid, decision, std::move(subject), NewRef(&context_), /*critical=*/true,
              account);
}

}  // namespace leash::proxy
