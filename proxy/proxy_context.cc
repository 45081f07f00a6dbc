#include "proxy/proxy_context.h"

#include <sys/socket.h>
#include <unistd.h>

namespace leash::proxy {

void LogDecision(ProxyContext* context, uint32_t uid, const engine::Decision& decision,
                 leash::v1::Subject subject, const std::string& ref, bool critical) {
  context->counters.decided.fetch_add(1, std::memory_order_relaxed);
  (decision.allowed() ? context->counters.allowed : context->counters.refused)
      .fetch_add(1, std::memory_order_relaxed);
  if (context->sink == nullptr) return;
  leash::v1::DecisionRecord record = engine::MakeDecisionRecord(
      absl::Now(), ref, uid, leash::v1::SURFACE_NETWORK, decision, std::move(subject));
  if (critical) record.set_severity("critical");
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
