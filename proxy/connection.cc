#include "proxy/connection.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "engine/network_entry.h"
#include "engine/reserved_ports.h"
#include "proxy/name_guard.h"
#include "proxy/dns_answer_cache.h"
#include "proxy/peek_limits.h"

namespace leash::proxy {
namespace {

constexpr unsigned kClientTag = 0;
constexpr unsigned kUpstreamTag = 1;
constexpr uint32_t kSpliceEvents = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;

leash::v1::Subject NetworkSubjectProto(const std::string& domain, const SocketAddress& address) {
  leash::v1::Subject subject;
  subject.set_domain(domain);
  subject.set_ip(engine::FormatIpAddress(address.ip));
  subject.set_port(address.port);
  return subject;
}

// Why resolved addresses were not used, for the log line: the first few, then a count (a zone
// the agent controls may answer with hundreds of addresses).
std::string JoinRefusals(const std::vector<std::string>& refused) {
  constexpr size_t kShown = 4;
  if (refused.size() <= kShown) return absl::StrCat("(", absl::StrJoin(refused, "), ("), ")");
  return absl::StrCat("(",
                      absl::StrJoin(refused.begin(), refused.begin() + kShown, "), ("),
                      "), and ", refused.size() - kShown, " more");
}

void SetNoDelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace

void Connection::Start(ProxyContext* context, int client_fd, uint32_t uid,
                       std::shared_ptr<const engine::CompiledPolicy> policy,
                       const SocketAddress& original_dst) {
  auto* connection = new Connection(context, client_fd, uid, std::move(policy), original_dst);
  if (absl::Status added = context->loop->Add(client_fd, EPOLLIN | EPOLLRDHUP | EPOLLET,
                                              connection, kClientTag);
      !added.ok()) {
    connection->Close(/*reset=*/true);
    return;
  }
  context->loop->ArmTimer(&connection->timer_, context->loop->now() + context->options.peek_timeout,
                          connection);
  // Most clients send their hello with the handshake's last ACK: try before waiting.
  connection->Peek(/*final=*/false, /*timed_out=*/false);
}

Connection::Connection(ProxyContext* context, int client_fd, uint32_t uid,
                       std::shared_ptr<const engine::CompiledPolicy> policy,
                       const SocketAddress& original_dst)
    : context_(context),
      client_fd_(client_fd),
      uid_(uid),
      original_dst_(original_dst),
      policy_(std::move(policy)) {
  context_->counters.active.fetch_add(1, std::memory_order_relaxed);
  ++context_->active_by_uid[uid_];
  next_ = context_->connections;
  if (next_ != nullptr) next_->prev_ = this;
  context_->connections = this;
}

void Connection::CloseAll(ProxyContext* context) {
  while (context->connections != nullptr) {
    Connection* connection = context->connections;
    if (connection->state_ == State::kConnecting || connection->state_ == State::kSplicing) {
      // Allowed and logged: the reset the agent sees is written down.
      connection->FailAllowed(Outcome::kProxyStopped,
                              "leash-proxy stopped with the connection open; the client was reset");
    } else {
      connection->Close(/*reset=*/true);
    }
  }
}

Connection::~Connection() {
  context_->counters.active.fetch_sub(1, std::memory_order_relaxed);
  auto held = context_->active_by_uid.find(uid_);
  if (held != context_->active_by_uid.end() && --held->second == 0) {
    context_->active_by_uid.erase(held);
  }
}

void Connection::OnEvents(uint32_t events, unsigned tag) {
  switch (state_) {
    case State::kPeeking:
      if (tag != kClientTag) return;
      if (events & EPOLLERR) {
        Close(/*reset=*/true);  // the client is gone before saying anything: nothing to decide
        return;
      }
      Peek(/*final=*/(events & (EPOLLRDHUP | EPOLLHUP)) != 0, /*timed_out=*/false);
      return;
    case State::kResolving:
      return;  // client bytes wait in its socket; they are spliced once connected
    case State::kConnecting:
      if (tag == kUpstreamTag) OnConnected();
      return;
    case State::kSplicing: {
      const bool readable = events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR);
      const bool writable = events & (EPOLLOUT | EPOLLHUP | EPOLLERR);
      if (tag == kClientTag) {
        if (readable && !Pump(to_upstream_, client_fd_, upstream_fd_)) return;
        if (writable) Pump(to_client_, upstream_fd_, client_fd_);
      } else {
        if (readable && !Pump(to_client_, upstream_fd_, client_fd_)) return;
        if (writable) Pump(to_upstream_, client_fd_, upstream_fd_);
      }
      return;
    }
    case State::kClosed:
      return;
  }
}

void Connection::OnTimer() {
  switch (state_) {
    case State::kPeeking:
      Peek(/*final=*/true, /*timed_out=*/true);
      return;
    case State::kResolving: {
      context_->resolver->Cancel(pending_->name, this);
      engine::Decision blocked;
      blocked.reason = absl::StrCat(pending_->decision.reason, "; resolving ", pending_->name,
                                    " took longer than ",
                                    absl::FormatDuration(context_->options.connect_timeout));
      Block(std::move(blocked), pending_->subject, ref_);
      return;
    }
    case State::kConnecting: {
      // Allowed and logged already; the upstream never answered. Reset like a refusal.
      NoteFailedAttempt(ETIMEDOUT, absl::StrCat("no answer within ",
                                                absl::FormatDuration(context_->options.connect_timeout)));
      FailAllowed(Outcome::kTimedOut,
                  absl::StrCat("no upstream address took the connection (",
                               absl::StrJoin(pending_->failed_attempts, "; "),
                               "); the client was reset"));
      return;
    }
    default:
      return;
  }
}

void Connection::Peek(bool final, bool timed_out) {
  ssize_t n = recv(client_fd_, context_->scratch.get(), kMaxPeekBytes, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0) {
    if (errno != EAGAIN && errno != EINTR) {
      Close(/*reset=*/true);  // reset by the client before a decision
      return;
    }
    n = 0;
  } else if (n == 0) {
    final = true;  // EOF: nothing more will come
  }
  const PeekResult peek =
      PeekDestinationName(absl::string_view(context_->scratch.get(), static_cast<size_t>(n)), final);
  if (peek.outcome == PeekOutcome::kNeedMore) return;
  context_->loop->CancelTimer(&timer_);
  Decide(peek, timed_out);
}

void Connection::Decide(const PeekResult& peek, bool timed_out) {
  context_->loop->Modify(client_fd_, EPOLLRDHUP | EPOLLET, this, kClientTag).IgnoreError();
  auto pending = std::make_unique<Pending>();
  ref_ = NewRef(context_);
  engine::NetworkSubject subject;
  subject.ip = original_dst_.ip;
  subject.port = original_dst_.port;
  if (peek.outcome == PeekOutcome::kName) subject.domain = engine::NormalizeHost(peek.domain);
  pending->subject = NetworkSubjectProto(subject.domain, original_dst_);
  domain_ = subject.domain;

  if (peek.outcome == PeekOutcome::kUnreadable && policy_->fail_mode() != engine::FailMode::kOpen) {
    // The connection says it carries a name (a TLS hello, an HTTP request) and it cannot be
    // read, so a rule on that name cannot be checked: refused (fail_mode closed).
    pending->decision = engine::FailDecision(
        policy_->fail_mode(), leash::v1::SURFACE_NETWORK,
        absl::StrCat("destination name unreadable (", peek.detail, ") for ",
                     FormatSocketAddress(original_dst_)));
  } else if (peek.outcome == PeekOutcome::kUnreadable) {
    // Under fail_mode open, the same is decided on the address, as a connection that carries
    // no name is. The unreadable bytes are the agent's own, not an internal error, so they
    // never take it anywhere the address alone would not (a deny or a whitelist miss holds).
    pending->decision = policy_->DecideNetwork(subject);
    absl::StrAppend(&pending->decision.reason, "; destination name unreadable (", peek.detail,
                    "), decided on the address (fail_mode: open)");
  } else {
    pending->decision = policy_->DecideNetwork(subject);
    if (peek.outcome == PeekOutcome::kName) {
      absl::StrAppend(&pending->decision.reason, "; name from ", peek.detail);
    } else {
      absl::StrAppend(&pending->decision.reason, "; no name read (",
                      timed_out ? absl::StrCat("nothing sent within ",
                                               absl::FormatDuration(context_->options.peek_timeout))
                                : peek.detail,
                      "), decided on the address");
    }
  }
  // Rule L4: what is written above the tier that set audit (its deny entries) judges the same
  // connection; a block it makes too stays enforced.
  pending->decision = policy_->UnderAudit(
      leash::v1::SURFACE_NETWORK, std::move(pending->decision),
      [&](const engine::CompiledPolicy& above) {
        if (peek.outcome == PeekOutcome::kUnreadable && above.fail_mode() != engine::FailMode::kOpen) {
          return true;
        }
        return !above.DecideNetwork(subject).allowed();
      });
  if (!pending->decision.permits()) {
    Block(pending->decision, pending->subject, ref_);
    return;
  }
  // A block under audit goes on below as a connection judged on its address: to the original
  // destination, logged as the block it would be (enforced: false).
  if (pending->decision.allowed() && pending->decision.matched_on == engine::MatchedOn::kDomain) {
    // Allowed on the name: connect only to an address the proxy resolves for that name, never
    // to the one the agent supplied (which a forged SNI or Host would otherwise unlock).
    pending->name = subject.domain;
    pending_ = std::move(pending);
    state_ = State::kResolving;
    context_->loop->ArmTimer(&timer_, context_->loop->now() + context_->options.connect_timeout,
                             this);
    if (context_->dns_answers != nullptr) {
      // What the subject's DNS filter told the agent for this name, while its TTL lasts: the
      // proxy connects where the agent was told the name is, never to a second lookup's answer.
      ResolveResult given;
      given.addresses = context_->dns_answers->Lookup(uid_, pending_->name, context_->loop->now());
      if (!given.addresses.empty()) {
        pending_->from_dns_filter = true;
        OnResolved(given);
        return;
      }
    }
    if (std::optional<ResolveResult> cached = context_->resolver->Resolve(pending_->name, uid_, this)) {
      OnResolved(*cached);
    }
    return;
  }
  // Allowed on the address (or in blacklist mode): the original destination was what was
  // judged, so it is where the connection goes.
  pending->targets.push_back(original_dst_);
  pending_ = std::move(pending);
  policy_.reset();
  context_->loop->ArmTimer(&timer_, context_->loop->now() + context_->options.connect_timeout,
                           this);
  ConnectNext();
  LogPendingOnce();
}

void Connection::OnResolved(const ResolveResult& result) {
  if (state_ != State::kResolving) return;
  Pending& pending = *pending_;
  if (!result.status.ok()) {
    engine::Decision blocked;
    blocked.reason = absl::StrCat(pending.decision.reason, "; ", result.status.message(),
                                  " (the proxy connects only to an address it resolved)");
    Block(std::move(blocked), pending.subject, ref_);
    return;
  }
  // Every resolved address is judged too, so a deny entry on an address (or a network) still
  // holds when the name that led there is allowed; and a name never leads on its own to an
  // address the destination guard keeps for IP entries (DNS rebinding toward this host, the
  // metadata endpoint, the private network).
  std::vector<std::string> refused;
  // Addresses only the subject's policy refused: under audit, where the connection goes when
  // every address is refused (the reserved ports and the destination guard keep the boundary).
  std::vector<SocketAddress> audit_targets;
  std::optional<absl::StatusOr<absl::Span<const engine::IpAddress>>> own;
  for (const engine::IpAddress& address : result.addresses) {
    if (engine::IsReservedLoopbackPort(address, original_dst_.port)) {
      // A name that resolves to this host must not carry the agent, through the proxy's own
      // (root) connection, to another subject's listener or anything else in the range.
      refused.push_back(absl::StrCat(engine::FormatIpAddress(address), " port ",
                                     original_dst_.port,
                                     " is in Leash's reserved loopback port range ",
                                     engine::kProxyPortFirst, "-", engine::kProxyPortLast));
      continue;
    }
    engine::NetworkSubject subject;
    subject.domain = pending.name;
    subject.ip = address;
    subject.port = original_dst_.port;
    const engine::Decision again = policy_->DecideNetwork(subject);
    if (!again.allowed()) {
      audit_targets.push_back(SocketAddress{address, original_dst_.port});
      refused.push_back(again.reason);
      continue;
    }
    if (context_->options.guard_name_destinations &&
        again.matched_on != engine::MatchedOn::kIp) {
      if (!own) own = OwnAddresses(context_->options);  // read once per answer, only when needed
      if (std::optional<std::string> guarded =
              GuardNamedAddress(address, original_dst_.port, *own,
                                context_->options.routes.get(), policy_->fail_mode())) {
        refused.push_back(*std::move(guarded));
        continue;
      }
    }
    pending.targets.push_back(SocketAddress{address, original_dst_.port});
  }
  if (pending.targets.empty()) {
    engine::Decision blocked;
    blocked.reason = absl::StrCat(pending.decision.reason, "; every address ", pending.name,
                                  " resolved to is blocked ", JoinRefusals(refused));
    if (!audit_targets.empty()) {
      // Rule L4: only addresses the policy written above the tier that set audit allows may
      // take the connection; with none, the block stays enforced.
      blocked = policy_->UnderAudit(
          leash::v1::SURFACE_NETWORK, std::move(blocked),
          [&](const engine::CompiledPolicy& above) {
            std::vector<SocketAddress> kept;
            for (const SocketAddress& target : audit_targets) {
              engine::NetworkSubject subject;
              subject.domain = pending.name;
              subject.ip = target.ip;
              subject.port = target.port;
              if (above.DecideNetwork(subject).allowed()) kept.push_back(target);
            }
            audit_targets = std::move(kept);
            return audit_targets.empty();
          });
    }
    if (blocked.enforced) {
      Block(std::move(blocked), pending.subject, ref_);
      return;
    }
    // Audit: the addresses the policy alone refused take the connection, logged as a block.
    pending.targets = std::move(audit_targets);
    pending.decision = std::move(blocked);
    policy_.reset();
    ConnectNext();
    LogPendingOnce();
    return;
  }
  absl::StrAppend(&pending.decision.reason, "; connecting to ",
                  FormatSocketAddress(pending.targets.front()),
                  pending.from_dns_filter ? " as the subject's DNS filter answered it"
                                          : " as resolved by the proxy");
  if (!refused.empty()) {
    absl::StrAppend(&pending.decision.reason, ", not to ", JoinRefusals(refused));
  }
  policy_.reset();
  ConnectNext();
  LogPendingOnce();
}

void Connection::ConnectNext() {
  Pending& pending = *pending_;
  while (pending.next_target < pending.targets.size()) {
    const SocketAddress& target = pending.targets[pending.next_target++];
    if (upstream_fd_ >= 0) {
      close(upstream_fd_);
      upstream_fd_ = -1;
    }
    upstream_fd_ = socket(Family(target), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (upstream_fd_ < 0) {
      NoteFailedAttempt(errno, "socket");
      continue;
    }
    SetNoDelay(upstream_fd_);
    sockaddr_storage storage;
    const socklen_t length = ToSockaddr(target, &storage);
    if (connect(upstream_fd_, reinterpret_cast<sockaddr*>(&storage), length) != 0 &&
        errno != EINPROGRESS) {
      NoteFailedAttempt(errno, "connect");
      continue;
    }
    state_ = State::kConnecting;
    if (absl::Status added = context_->loop->Add(upstream_fd_, EPOLLOUT | EPOLLET, this, kUpstreamTag);
        !added.ok()) {
      NoteFailedAttempt(0, std::string(added.message()));
      continue;
    }
    // To a local or nearby host the handshake has often completed by the time connect()
    // returns: go on now rather than one loop pass later (connect-to-first-byte).
    pollfd ready{upstream_fd_, POLLOUT, 0};
    if (poll(&ready, 1, 0) == 1) OnConnected();
    return;
  }
  // No address could be reached. The decision was an allow; the client gets a reset, and the
  // log says why.
  FailAllowed(pending.last_failure,
              absl::StrCat("no upstream address took the connection (",
                           absl::StrJoin(pending.failed_attempts, "; "), "); the client was reset"));
}

void Connection::NoteFailedAttempt(int error, const std::string& detail) {
  Pending& pending = *pending_;
  const SocketAddress& target = pending.targets[pending.next_target - 1];
  std::string why = detail;
  if (error != 0) absl::StrAppend(&why, ": ", std::strerror(error));
  pending.failed_attempts.push_back(absl::StrCat(FormatSocketAddress(target), " ", why));
  switch (error) {
    case ECONNREFUSED:
      pending.last_failure = Outcome::kRefused;
      break;
    case ETIMEDOUT:
      pending.last_failure = Outcome::kTimedOut;
      break;
    case ENETUNREACH:
    case EHOSTUNREACH:
    case EADDRNOTAVAIL:
    case ENETDOWN:
    case EHOSTDOWN:
      pending.last_failure = Outcome::kUnreachable;
      break;
    default:
      // The proxy's own trouble (descriptors, epoll), not the upstream's.
      pending.last_failure = Outcome::kProxyError;
      break;
  }
}

void Connection::OnConnected() {
  int error = 0;
  socklen_t length = sizeof(error);
  if (getsockopt(upstream_fd_, SOL_SOCKET, SO_ERROR, &error, &length) != 0) error = errno;
  if (error != 0) {
    NoteFailedAttempt(error, "connect");
    context_->loop->Remove(upstream_fd_);
    ConnectNext();
    return;
  }
  StartSplicing();
}

void Connection::StartSplicing() {
  context_->loop->CancelTimer(&timer_);
  upstream_address_ = pending_->targets[pending_->next_target - 1];
  state_ = State::kSplicing;
  SetNoDelay(client_fd_);
  if (absl::Status watched = context_->loop->Modify(client_fd_, kSpliceEvents, this, kClientTag);
      !watched.ok() ||
      !(watched = context_->loop->Modify(upstream_fd_, kSpliceEvents, this, kUpstreamTag)).ok()) {
    FailAllowed(Outcome::kProxyError,
                absl::StrCat("connected, but the proxy could not watch the connection (",
                             watched.message(), "); the client was reset"));
  } else if (Pump(to_upstream_, client_fd_, upstream_fd_)) {
    // The peeked bytes were still queued on the client socket: they went first, untouched.
    Pump(to_client_, upstream_fd_, client_fd_);
  }
  // The connection may have finished above; it is deleted only after this batch of events.
  LogPendingOnce();  // the answer first, then the log
  pending_.reset();
}

bool Connection::AcquirePipe(Direction& direction) {
  if (!context_->free_pipes.empty()) {
    std::tie(direction.pipe_read, direction.pipe_write) = context_->free_pipes.back();
    context_->free_pipes.pop_back();
    return true;
  }
  int fds[2];
  if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return false;
  if (context_->options.pipe_size > 0) fcntl(fds[1], F_SETPIPE_SZ, context_->options.pipe_size);
  direction.pipe_read = fds[0];
  direction.pipe_write = fds[1];
  return true;
}

void Connection::ReleasePipe(Direction& direction) {
  if (direction.pipe_read < 0) return;
  if (direction.in_pipe == 0 && context_->free_pipes.size() < context_->max_free_pipes) {
    context_->free_pipes.emplace_back(direction.pipe_read, direction.pipe_write);
  } else {
    close(direction.pipe_read);
    close(direction.pipe_write);
  }
  direction.pipe_read = direction.pipe_write = -1;
  direction.in_pipe = 0;
}

bool Connection::Pump(Direction& direction, int src, int dst) {
  if (state_ != State::kSplicing) return false;
  while (true) {
    if (direction.in_pipe > 0) {
      const ssize_t n = splice(direction.pipe_read, nullptr, dst, nullptr, direction.in_pipe,
                               SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n > 0) {
        direction.in_pipe -= static_cast<uint32_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return true;  // dst full: EPOLLOUT resumes
      FailSplice(dst, n < 0 ? errno : EPIPE);     // EPIPE / ECONNRESET: abort both sides
      return false;
    }
    if (direction.eof) {
      if (!direction.shut) {
        // Half-close carried across: the other direction keeps flowing.
        shutdown(dst, SHUT_WR);
        direction.shut = true;
        ReleasePipe(direction);
        if (to_upstream_.shut && to_client_.shut) {
          Close(/*reset=*/false);
          return false;
        }
      }
      return true;
    }
    if (direction.pipe_read < 0 && !AcquirePipe(direction)) {
      FailAllowed(Outcome::kProxyError,
                  absl::StrCat("the proxy could not make a pipe to splice through (",
                               std::strerror(errno), "); the client was reset"));
      return false;
    }
    const ssize_t n = splice(src, nullptr, direction.pipe_write, nullptr, context_->pipe_capacity,
                             SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n > 0) {
      direction.in_pipe += static_cast<uint32_t>(n);
      continue;
    }
    if (n == 0) {
      direction.eof = true;
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN) {
      ReleasePipe(direction);  // idle: hold no pipe
      return true;
    }
    FailSplice(src, errno);
    return false;
  }
}

void Connection::FailSplice(int fd, int error) {
  if (fd != upstream_fd_) {
    Close(/*reset=*/true);  // the client reset its own connection: passed on upstream
    return;
  }
  FailAllowed(Outcome::kReset,
              absl::StrCat("the upstream ", FormatSocketAddress(upstream_address_),
                           " failed mid-stream (", std::strerror(error),
                           "); the client was reset"));
}

void Connection::FailAllowed(Outcome outcome, const std::string& reason) {
  Close(/*reset=*/true);  // the answer first
  LogPendingOnce();       // the allow line comes before its outcome
  LogOutcome(context_, uid_, ref_, NetworkSubjectProto(domain_, original_dst_), outcome, reason);
}

void Connection::Block(engine::Decision decision, leash::v1::Subject subject, std::string ref) {
  decision.verdict = engine::Verdict::kBlock;
  Close(/*reset=*/true);  // the answer first
  LogDecision(context_, uid_, decision, std::move(subject), ref, /*critical=*/false);
}

void Connection::LogPendingOnce() {
  if (pending_ == nullptr || pending_->logged) return;
  pending_->logged = true;
  LogDecision(context_, uid_, pending_->decision, pending_->subject, ref_, /*critical=*/false);
}

void Connection::Close(bool reset) {
  if (state_ == State::kClosed) return;
  if (state_ == State::kResolving && pending_ != nullptr) {
    context_->resolver->Cancel(pending_->name, this);
  }
  state_ = State::kClosed;
  (prev_ != nullptr ? prev_->next_ : context_->connections) = next_;
  if (next_ != nullptr) next_->prev_ = prev_;
  prev_ = next_ = nullptr;
  context_->loop->CancelTimer(&timer_);
  if (reset) {
    ResetAndClose(client_fd_);
    if (upstream_fd_ >= 0) ResetAndClose(upstream_fd_);
  } else {
    close(client_fd_);
    if (upstream_fd_ >= 0) close(upstream_fd_);
  }
  client_fd_ = upstream_fd_ = -1;
  // A pipe with bytes still in it is closed, not pooled.
  ReleasePipe(to_upstream_);
  ReleasePipe(to_client_);
  context_->loop->DeleteSoon(this);
}

}  // namespace leash::proxy
