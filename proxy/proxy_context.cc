#include "proxy/proxy_context.h"

#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace leash::proxy {

void LogDecision(ProxyContext* context, uint32_t uid, const engine::Decision& decision,
                 leash::v1::Subject subject, const std::string& ref, bool critical,
                 const std::string& account) {
  context->counters.decided.fetch_add(1, std::memory_order_relaxed);
  (decision.allowed()   ? context->counters.allowed
   : decision.enforced ? context->counters.refused
                       : context->counters.audited)
      .fetch_add(1, std::memory_order_relaxed);
  // Every network decision passes here, so each would-be block is counted once, as decided:
  // the log's lines may be lost or held back by logging.level, the count is not.
  if (!decision.allowed() && !decision.enforced) {
    context->counters.would_be_blocks.Add(uid, leash::v1::SURFACE_NETWORK);
  }
  if (context->sink == nullptr) return;
  leash::v1::DecisionRecord record = engine::MakeDecisionRecord(
      absl::Now(), ref, uid, leash::v1::SURFACE_NETWORK, decision, std::move(subject));
  if (critical) record.set_severity("critical");
  record.set_account(account);
  context->sink->Record(std::move(record));
}

absl::string_view OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kRefused:
      return "refused";
    case Outcome::kUnreachable:
      return "unreachable";
    case Outcome::kTimedOut:
      return "timed_out";
    case Outcome::kReset:
      return "reset";
    case Outcome::kProxyError:
      return "proxy_error";
    case Outcome::kProxyStopped:
      return "proxy_stopped";
  }
  return "unknown";
}

void LogOutcome(ProxyContext* context, uint32_t uid, const std::string& ref,
                leash::v1::Subject subject, Outcome outcome, const std::string& reason) {
  context->counters.outcomes.fetch_add(1, std::memory_order_relaxed);
  if (context->sink == nullptr) return;
  engine::Decision what;
  what.reason = absl::StrCat("network: outcome of the allowed connection ", ref, ": ", reason);
  leash::v1::DecisionRecord record = engine::MakeDecisionRecord(
      absl::Now(), ref, uid, leash::v1::SURFACE_NETWORK, what, std::move(subject));
  // Not a second decision: a reader counting allows and blocks must not count this line.
  record.set_action("outcome");
  record.set_outcome(std::string(OutcomeName(outcome)));
  context->sink->Record(std::move(record));
}

std::string NewRef(ProxyContext* context) {
  return engine::MakeRef(absl::Uniform<uint64_t>(context->rng));
}

void ResetAndClose(int fd) {
  const linger reset{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
  close(fd);
}

}  // namespace leash::proxy
