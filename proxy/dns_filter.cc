#include "proxy/dns_filter.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "proxy/name_guard.h"
#include "proxy/socket_address.h"

namespace leash::proxy {
namespace {

constexpr uint16_t kDnsPort = 53;

std::string TypeName(uint16_t type) {
  switch (type) {
    case dns::kTypeA:
      return "A";
    case dns::kTypeAaaa:
      return "AAAA";
    case dns::kTypeCname:
      return "CNAME";
    case dns::kTypeTxt:
      return "TXT";
    default:
      return absl::StrCat("type ", type);
  }
}

leash::v1::Subject DnsSubject(const std::string& name, const std::vector<engine::IpAddress>& resolvers) {
  leash::v1::Subject subject;
  if (!name.empty()) subject.set_domain(name);
  if (!resolvers.empty()) subject.set_ip(engine::FormatIpAddress(resolvers.front()));
  subject.set_port(kDnsPort);
  return subject;
}

std::string ResolverList(const std::vector<engine::IpAddress>& resolvers) {
  std::vector<std::string> out;
  for (const engine::IpAddress& resolver : resolvers) out.push_back(engine::FormatIpAddress(resolver));
  return absl::StrJoin(out, ", ");
}

}  // namespace

struct DnsFilter::Upstream final : public EventLoop::Handler {
  DnsFilter* filter = nullptr;
  int fd = -1;
  SocketAddress resolver;
  // The filter's id of each question waiting here -> its exchange.
  absl::flat_hash_map<uint16_t, Exchange*> waiting;
  void OnEvents(uint32_t /*events*/, unsigned /*tag*/) override { filter->ReadUpstream(this); }
};

// One forwarded question: to each resolver in turn, over the asker's transport, until one gives
// an answer that matches the question.
class DnsFilter::Exchange final : public EventLoop::Handler,
                                  public EventLoop::TimerTarget,
                                  public EventLoop::Deletable {
 public:
  Exchange(DnsFilter* filter, const DnsAsker& asker, absl::string_view query, dns::Message parsed,
           std::string ref, DnsReplyFn reply)
      : filter_(filter),
        uid_(asker.uid),
        policy_(asker.policy),
        tcp_(asker.tcp),
        resolvers_(asker.resolvers),
        query_(query),
        parsed_(std::move(parsed)),
        ref_(std::move(ref)),
        reply_(std::move(reply)) {
    max_reply_ = dns::kClassicUdpBytes;
    if (parsed_.edns_udp_size) max_reply_ = std::max<size_t>(max_reply_, *parsed_.edns_udp_size);
  }

  void Start() { TryNext(); }

  // Ends the exchange without a reply.
  void Cancel() { Done(); }

  uint32_t uid() const { return uid_; }

  void OnEvents(uint32_t events, unsigned /*tag*/) override {
    if (!done_) OnTcpEvents(events);
  }

  // A datagram on this exchange's upstream socket carrying its id (restored to the agent's).
  void OnUdpAnswer(std::string bytes) {
    bytes[0] = static_cast<char>(parsed_.header.id >> 8);
    bytes[1] = static_cast<char>(parsed_.header.id & 0xFF);
    Consider(bytes, /*final=*/false);
  }

  // The upstream socket reported an error (an ICMP unreachable from the resolver).
  void OnUdpError(int error) {
    AttemptFailed(absl::StrCat("recv: ", std::strerror(error)),
                  error == ECONNREFUSED ? Outcome::kRefused : Outcome::kUnreachable);
  }

  void OnTimer() override {
    AttemptFailed(absl::StrCat("no answer within ",
                               absl::FormatDuration(filter_->options_.attempt_timeout),
                               ignored_.empty() ? "" : absl::StrCat(" (not taken: ", ignored_, ")")),
                  Outcome::kTimedOut);
  }

 private:
  ProxyContext* context() const { return filter_->context_; }

  void TryNext() {
    CloseSocket();
    while (next_ < resolvers_.size()) {
      const SocketAddress target{resolvers_[next_++], kDnsPort};
      current_ = target;
      if (!tcp_) {
        if (SendUdp(target)) return;
        continue;
      }
      fd_ = socket(Family(target), (tcp_ ? SOCK_STREAM : SOCK_DGRAM) | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd_ < 0) {
        failures_.push_back(absl::StrCat(FormatSocketAddress(target), " socket: ", std::strerror(errno)));
        continue;
      }
      sockaddr_storage storage;
      const socklen_t length = ToSockaddr(target, &storage);
      if (connect(fd_, reinterpret_cast<sockaddr*>(&storage), length) != 0 && errno != EINPROGRESS) {
        failures_.push_back(absl::StrCat(FormatSocketAddress(target), " connect: ", std::strerror(errno)));
        CloseSocket();
        continue;
      }
      out_.clear();
      out_ += static_cast<char>(query_.size() >> 8);
      out_ += static_cast<char>(query_.size() & 0xFF);
      out_ += query_;
      written_ = 0;
      in_.clear();
      connected_ = false;
      write_done_ = false;
      if (absl::Status added = context()->loop->Add(fd_, EPOLLIN | EPOLLOUT | EPOLLRDHUP, this);
          !added.ok()) {
        failures_.push_back(absl::StrCat(FormatSocketAddress(target), " ", added.message()));
        close(fd_);
        fd_ = -1;
        continue;
      }
      context()->loop->ArmTimer(&timer_, context()->loop->now() + filter_->options_.attempt_timeout,
                                this);
      return;
    }
    // No resolver answered: the agent hears SERVFAIL, and the log says why under the ref of
    // the question's allow record.
    std::string reply = dns::BuildReply(query_, parsed_, dns::Rcode::kServFail);
    DnsReplyFn answer = std::move(reply_);
    const std::string why =
        resolvers_.empty() ? "no resolver to ask" : absl::StrJoin(failures_, "; ");
    const Outcome outcome = last_outcome_;
    const std::string ref = ref_;
    const uint32_t uid = uid_;
    leash::v1::Subject subject = DnsSubject(parsed_.questions.front().name, resolvers_);
    ProxyContext* const ctx = context();
    Done();
    answer(std::move(reply));
    LogOutcome(ctx, uid, ref, std::move(subject), outcome,
               absl::StrCat("no resolver answered the DNS question (", why,
                            "); the agent was answered SERVFAIL"));
  }

  void AttemptFailed(const std::string& why, Outcome outcome) {
    if (done_) return;
    failures_.push_back(absl::StrCat(FormatSocketAddress(current_), " ", why));
    last_outcome_ = outcome;
    context()->loop->CancelTimer(&timer_);
    TryNext();
  }

  // Sends the question on one of the filter's sockets to `target` under an id of its own.
  bool SendUdp(const SocketAddress& target) {
    upstream_ = filter_->UpstreamFor(target);
    if (upstream_ == nullptr) {
      failures_.push_back(absl::StrCat(FormatSocketAddress(target), " socket: ", std::strerror(errno)));
      return false;
    }
    do {
      upstream_id_ = absl::Uniform<uint16_t>(context()->rng);
    } while (upstream_->waiting.contains(upstream_id_));
    std::string query = query_;
    query[0] = static_cast<char>(upstream_id_ >> 8);
    query[1] = static_cast<char>(upstream_id_ & 0xFF);
    if (send(upstream_->fd, query.data(), query.size(), MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
      failures_.push_back(absl::StrCat(FormatSocketAddress(target), " send: ", std::strerror(errno)));
      upstream_ = nullptr;
      return false;
    }
    upstream_->waiting[upstream_id_] = this;
    context()->loop->ArmTimer(&timer_, context()->loop->now() + filter_->options_.attempt_timeout,
                              this);
    return true;
  }

  void OnTcpEvents(uint32_t events) {
    if (!connected_) {
      int error = 0;
      socklen_t length = sizeof(error);
      if (getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &length) != 0) error = errno;
      if (error != 0) {
        AttemptFailed(absl::StrCat("connect: ", std::strerror(error)),
                      error == ECONNREFUSED ? Outcome::kRefused : Outcome::kUnreachable);
        return;
      }
      if (!(events & (EPOLLOUT | EPOLLIN))) return;
      connected_ = true;
    }
    while (written_ < out_.size()) {
      const ssize_t n = send(fd_, out_.data() + written_, out_.size() - written_, MSG_NOSIGNAL);
      if (n > 0) {
        written_ += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      AttemptFailed(absl::StrCat("send: ", std::strerror(errno)), Outcome::kReset);
      return;
    }
    if (!write_done_) {
      // All sent: from now on only the answer matters (a writable socket would wake the loop
      // on every pass).
      write_done_ = true;
      context()->loop->Modify(fd_, EPOLLIN | EPOLLRDHUP, this).IgnoreError();
    }
    char buffer[16384];
    while (!done_) {
      const ssize_t n = recv(fd_, buffer, sizeof(buffer), MSG_DONTWAIT);
      if (n > 0) {
        in_.append(buffer, static_cast<size_t>(n));
        if (in_.size() >= 2) {
          const size_t want = (static_cast<uint8_t>(in_[0]) << 8) | static_cast<uint8_t>(in_[1]);
          if (in_.size() >= 2 + want) {
            Consider(absl::string_view(in_).substr(2, want), /*final=*/true);
            return;
          }
        }
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      AttemptFailed(n == 0 ? "closed the connection before answering"
                           : absl::StrCat("recv: ", std::strerror(errno)),
                    Outcome::kReset);
      return;
    }
  }

  // `bytes` came from the resolver: the answer when it parses and answers the question. Over
  // TCP (`final`) nothing else can follow, so anything else is this resolver's failure.
  void Consider(absl::string_view bytes, bool final) {
    absl::StatusOr<dns::Message> answer = dns::ParseMessage(bytes);
    if (!answer.ok() || !dns::AnswersQuery(parsed_, *answer)) {
      const std::string why = !answer.ok() ? std::string(answer.status().message())
                                           : "an answer to another question";
      if (final) {
        AttemptFailed(why, Outcome::kProxyError);
      } else {
        ignored_ = why;
      }
      return;
    }
    const dns::Question& question = parsed_.questions.front();
    if (std::optional<std::string> guarded = GuardedAddressIn(*answer)) {
      // The answer leads to an address a name may not lead to on its own: the agent gets
      // REFUSED, and nothing of it is kept for resolve-then-connect.
      engine::Decision decision;
      decision.reason = absl::StrCat("network: DNS name ", question.name, " answered with ",
                                     *guarded, "; answered REFUSED");
      ProxyContext* const context = this->context();
      const uint32_t uid = uid_;
      leash::v1::Subject subject = DnsSubject(question.name, resolvers_);
      const std::string ref = ref_;
      std::string reply = dns::BuildReply(query_, parsed_, dns::Rcode::kRefused);
      DnsReplyFn answer_fn = std::move(reply_);
      Done();
      answer_fn(std::move(reply));
      LogDecision(context, uid, decision, std::move(subject), ref, false);
      return;
    }
    if (question.type == dns::kTypeA || question.type == dns::kTypeAaaa) {
      const engine::IpAddress::Family family = question.type == dns::kTypeA
                                                   ? engine::IpAddress::Family::kV4
                                                   : engine::IpAddress::Family::kV6;
      dns::AnswerAddresses found = dns::AddressesFor(*answer);
      std::vector<engine::IpAddress> addresses;
      for (const engine::IpAddress& address : found.addresses) {
        // Where a per-address check of what an answer may hold belongs (one call per address,
        // before the address is kept or handed to the agent).
        if (address.family == family) addresses.push_back(address);
      }
      if (!addresses.empty()) {
        const absl::Duration ttl = std::clamp(absl::Seconds(found.ttl), filter_->options_.min_cache_ttl,
                                              filter_->options_.max_cache_ttl);
        filter_->cache_->Store(uid_, question.name, family, std::move(addresses),
                               context()->loop->now() + ttl);
      }
    }
    std::string reply = !tcp_ && bytes.size() > max_reply_ ? dns::Truncate(bytes, *answer)
                                                          : std::string(bytes);
    DnsReplyFn answer_fn = std::move(reply_);
    Done();
    answer_fn(std::move(reply));
  }

  // The destination guard's refusal of the first address record of `answer` that no IP/CIDR
  // entry of the subject names (the answer section's every A and AAAA record, whatever the
  // question, since the agent may use any of them), or nullopt.
  std::optional<std::string> GuardedAddressIn(const dns::Message& answer) {
    if (!context()->options.guard_name_destinations || policy_ == nullptr) return std::nullopt;
    std::optional<absl::StatusOr<absl::Span<const engine::IpAddress>>> own;
    for (const dns::Record& record : answer.answers) {
      if (!record.address) continue;
      engine::NetworkSubject subject;
      subject.ip = *record.address;
      const engine::Decision by_address = policy_->DecideNetwork(subject);
      if (by_address.allowed() && by_address.matched_on == engine::MatchedOn::kIp) continue;
      if (!own) own = OwnAddresses(context()->options);  // read once per answer, when needed
      if (std::optional<std::string> guarded =
              GuardNamedAddress(*record.address, /*port=*/0, *own,
                                context()->options.routes.get(), policy_->fail_mode())) {
        return guarded;
      }
    }
    return std::nullopt;
  }

  void CloseSocket() {
    if (upstream_ != nullptr) {
      upstream_->waiting.erase(upstream_id_);
      upstream_ = nullptr;
    }
    if (fd_ < 0) return;
    context()->loop->Remove(fd_);
    close(fd_);
    fd_ = -1;
  }

  void Done() {
    if (done_) return;
    done_ = true;
    CloseSocket();
    context()->loop->CancelTimer(&timer_);
    filter_->Finished(this);
  }

  DnsFilter* const filter_;
  const uint32_t uid_;
  const std::shared_ptr<const engine::CompiledPolicy> policy_;
  const bool tcp_;
  const std::vector<engine::IpAddress> resolvers_;
  const std::string query_;
  const dns::Message parsed_;
  const std::string ref_;
  DnsReplyFn reply_;
  size_t max_reply_ = dns::kClassicUdpBytes;
  EventLoop::TimerHandle timer_;
  size_t next_ = 0;
  int fd_ = -1;
  SocketAddress current_;
  std::vector<std::string> failures_;
  Outcome last_outcome_ = Outcome::kUnreachable;
  std::string ignored_;
  bool done_ = false;
  // UDP: the socket the question went out on, and the id it went out under.
  Upstream* upstream_ = nullptr;
  uint16_t upstream_id_ = 0;
  // TCP: the length-prefixed query, how much of it went, what came back.
  std::string out_;
  size_t written_ = 0;
  std::string in_;
  bool connected_ = false;
  bool write_done_ = false;
};

DnsFilter::DnsFilter(ProxyContext* context, DnsAnswerCache* cache, DnsFilterOptions options)
    : context_(context), cache_(cache), options_(options) {}

DnsFilter::~DnsFilter() {
  CancelAll();
  for (auto& [resolver, sockets] : upstreams_) {
    for (const std::unique_ptr<Upstream>& upstream : sockets) {
      context_->loop->Remove(upstream->fd);
      close(upstream->fd);
    }
  }
}

DnsFilter::Upstream* DnsFilter::UpstreamFor(const SocketAddress& resolver) {
  std::vector<std::unique_ptr<Upstream>>& sockets = upstreams_[resolver];
  if (sockets.size() < std::max<size_t>(1, options_.upstream_sockets)) {
    const int fd = socket(Family(resolver), SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return sockets.empty() ? nullptr : sockets.front().get();
    sockaddr_storage storage;
    const socklen_t length = ToSockaddr(resolver, &storage);
    auto upstream = std::make_unique<Upstream>();
    upstream->filter = this;
    upstream->fd = fd;
    upstream->resolver = resolver;
    if (connect(fd, reinterpret_cast<sockaddr*>(&storage), length) != 0 ||
        !context_->loop->Add(fd, EPOLLIN, upstream.get()).ok()) {
      const int error = errno;
      close(fd);
      errno = error;
      return sockets.empty() ? nullptr : sockets.front().get();
    }
    sockets.push_back(std::move(upstream));
    return sockets.back().get();
  }
  return sockets[absl::Uniform<size_t>(context_->rng, 0, sockets.size())].get();
}

void DnsFilter::ReadUpstream(Upstream* upstream) {
  char buffer[dns::kMaxMessageBytes];
  for (int i = 0; i < 64; ++i) {
    const ssize_t n = recv(upstream->fd, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return;
      // An ICMP error from the resolver: every question waiting on this socket has failed.
      const int error = errno;
      std::vector<Exchange*> waiting;
      for (const auto& [id, exchange] : upstream->waiting) waiting.push_back(exchange);
      for (Exchange* exchange : waiting) exchange->OnUdpError(error);
      continue;
    }
    // Only this resolver's address reaches a connected socket; a datagram whose id no question
    // is waiting under is not taken.
    if (n < 2) continue;
    const uint16_t id = static_cast<uint16_t>((static_cast<uint8_t>(buffer[0]) << 8) |
                                              static_cast<uint8_t>(buffer[1]));
    auto it = upstream->waiting.find(id);
    if (it == upstream->waiting.end()) continue;
    it->second->OnUdpAnswer(std::string(buffer, static_cast<size_t>(n)));
  }
}

void DnsFilter::CancelAll() {
  // Cancel() removes the exchange from the set: take a copy.
  std::vector<Exchange*> all(exchanges_.begin(), exchanges_.end());
  for (Exchange* exchange : all) exchange->Cancel();
}

size_t DnsFilter::in_flight(uint32_t uid) const {
  auto it = in_flight_.find(uid);
  return it == in_flight_.end() ? 0 : it->second;
}

void DnsFilter::Finished(Exchange* exchange) {
  exchanges_.erase(exchange);
  auto it = in_flight_.find(exchange->uid());
  if (it != in_flight_.end() && --it->second == 0) in_flight_.erase(it);
  context_->loop->DeleteSoon(exchange);
}

void DnsFilter::Refuse(uint32_t uid, absl::string_view query, const dns::Message* parsed,
                       dns::Rcode rcode, const std::string& name, const std::string& reason,
                       bool critical, const DnsReplyFn& reply) {
  reply(parsed != nullptr ? dns::BuildReply(query, *parsed, rcode)
                          : dns::BuildHeaderOnlyReply(query, rcode));  // the answer first
  engine::Decision decision;
  decision.reason = absl::StrCat("network: ", reason);
  LogDecision(context_, uid, decision, DnsSubject(name, {}), NewRef(context_), critical);
}

void DnsFilter::Handle(const DnsAsker& asker, absl::string_view query, DnsReplyFn reply) {
  const char* transport = asker.tcp ? "TCP" : "UDP";
  if (query.size() > kMaxDnsQueryBytes) {
    Refuse(asker.uid, query, nullptr, dns::Rcode::kRefused, "",
           absl::StrCat("DNS query of ", query.size(), " bytes over ", transport,
                        " is longer than any query (", kMaxDnsQueryBytes,
                        " bytes); answered REFUSED, never forwarded"),
           false, reply);
    return;
  }
  absl::StatusOr<dns::Message> parsed = dns::ParseMessage(query);
  if (!parsed.ok() && query.size() < dns::kHeaderBytes) {
    // Nothing to answer with (no id): dropped, and written down.
    engine::Decision decision;
    decision.reason = absl::StrCat("network: DNS message of ", query.size(), " bytes over ",
                                   transport, " has no header; dropped, never forwarded");
    LogDecision(context_, asker.uid, decision, DnsSubject("", {}), NewRef(context_), false);
    return;
  }
  if (!parsed.ok()) {
    Refuse(asker.uid, query, nullptr, dns::Rcode::kFormErr, "",
           absl::StrCat("DNS query over ", transport, " refused (", parsed.status().message(),
                        "); answered FORMERR, never forwarded"),
           false, reply);
    return;
  }
  if (parsed->header.response()) {
    engine::Decision decision;
    decision.reason = absl::StrCat("network: a DNS response sent over ", transport,
                                   " as a query; dropped, never forwarded");
    LogDecision(context_, asker.uid, decision, DnsSubject("", {}), NewRef(context_), false);
    return;
  }
  if (parsed->header.opcode() != 0) {
    Refuse(asker.uid, query, &*parsed, dns::Rcode::kNotImp, "",
           absl::StrCat("DNS message with opcode ", parsed->header.opcode(),
                        " (only QUERY is answered); answered NOTIMP, never forwarded"),
           false, reply);
    return;
  }
  if (parsed->questions.size() != 1) {
    std::vector<std::string> names;
    for (const dns::Question& question : parsed->questions) names.push_back(question.name);
    Refuse(asker.uid, query, &*parsed, dns::Rcode::kFormErr,
           names.empty() ? std::string() : names.front(),
           absl::StrCat("DNS query with ", names.size(), " questions (",
                        absl::StrJoin(names, ", "),
                        "): the filter answers one question per query, so that no name rides "
                        "along unjudged; answered FORMERR, never forwarded"),
           false, reply);
    return;
  }
  const dns::Question& question = parsed->questions.front();
  if (question.klass != dns::kClassIn) {
    Refuse(asker.uid, query, &*parsed, dns::Rcode::kRefused, question.name,
           absl::StrCat("DNS name ", question.name, " asked in class ", question.klass,
                        " (only IN is answered); answered REFUSED, never forwarded"),
           false, reply);
    return;
  }
  if (asker.policy == nullptr) {
    Refuse(asker.uid, query, &*parsed, dns::Rcode::kRefused, question.name,
           absl::StrCat("uid ", asker.uid, " has no policy (",
                        asker.no_policy_reason.empty() ? "not in the policy map"
                                                       : asker.no_policy_reason,
                        "): DNS name ", question.name, " answered REFUSED"),
           true, reply);
    return;
  }
  // Under audit a name the policy would not answer is forwarded as an allowed one is, and
  // logged as the block it would be: the connection it leads to is judged (and let through)
  // by the proxy.
  // A name the policy written above the tier that set audit would not answer stays NXDOMAIN
  // (rule L4).
  engine::Decision decision = asker.policy->UnderAudit(
      leash::v1::SURFACE_NETWORK, asker.policy->DecideDnsName(question.name),
      [&](const engine::CompiledPolicy& above) {
        return !above.DecideDnsName(question.name).allowed();
      });
  if (!decision.permits()) {
    reply(dns::BuildReply(query, *parsed, dns::Rcode::kNxDomain));  // the answer first
    absl::StrAppend(&decision.reason, "; ", TypeName(question.type), " question over ", transport,
                    " answered NXDOMAIN, never forwarded");
    LogDecision(context_, asker.uid, decision, DnsSubject(question.name, asker.resolvers),
                NewRef(context_), false);
    return;
  }
  if (asker.resolvers.empty()) {
    Refuse(asker.uid, query, &*parsed, dns::Rcode::kServFail, question.name,
           absl::StrCat("DNS name ", question.name,
                        " may be asked, but the subject has no resolvers (the host's "
                        "/etc/resolv.conf names none, and so does network.dns_resolvers); "
                        "answered SERVFAIL"),
           false, reply);
    return;
  }
  if (in_flight(asker.uid) >= options_.max_in_flight_per_subject) {
    Refuse(asker.uid, query, &*parsed, dns::Rcode::kRefused, question.name,
           absl::StrCat("DNS name ", question.name, ": uid ", asker.uid, " already has ",
                        options_.max_in_flight_per_subject,
                        " questions at its resolvers (each subject's own limit); answered "
                        "REFUSED"),
           false, reply);
    return;
  }
  const std::string ref = NewRef(context_);
  absl::StrAppend(&decision.reason, "; ", TypeName(question.type), " question over ", transport,
                  " forwarded to ", ResolverList(asker.resolvers));
  leash::v1::Subject subject = DnsSubject(question.name, asker.resolvers);
  auto* exchange = new Exchange(this, asker, query, *std::move(parsed), ref, std::move(reply));
  exchanges_.insert(exchange);
  ++in_flight_[asker.uid];
  LogDecision(context_, asker.uid, decision, std::move(subject), ref, false);
  exchange->Start();
}

}  // namespace leash::proxy
