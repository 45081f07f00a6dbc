#include "engine/config_defaults.h"

#include <string>

namespace leash::engine {
namespace {

using leash::v1::InspectAction;
using leash::v1::Mode;

template <typename SurfaceT>
void FillSurface(SurfaceT& surface) {
  if (!surface.has_mode()) surface.set_mode(Mode::MODE_WHITELIST);
  if (!surface.has_audit()) surface.set_audit(false);
  surface.mutable_allow();
  surface.mutable_deny();
}

InspectAction DefaultInspectAction(absl::string_view category) {
  // Personal data in a tool call is logged; secrets and privilege escalation are blocked.
  return category == "pii" ? InspectAction::INSPECT_ACTION_LOG
                           : InspectAction::INSPECT_ACTION_BLOCK;
}

}  // namespace

FailMode EffectiveFailMode(const leash::v1::Config& config) {
  return config.has_fail_mode() && config.fail_mode() == "open" ? FailMode::kOpen
                                                                : FailMode::kClosed;
}

bool IsKnownFailMode(absl::string_view fail_mode) {
  return fail_mode == "closed" || fail_mode == "open";
}

leash::v1::Config WithDefaults(const leash::v1::Config& config) {
  leash::v1::Config out = config;
  if (!out.has_fail_mode()) out.set_fail_mode("closed");

  leash::v1::NetworkPolicy& network = *out.mutable_network();
  FillSurface(network);
  if (!network.has_udp()) network.set_udp(leash::v1::UdpMode::UDP_MODE_DROP);
  if (!network.has_inbound()) network.set_inbound(leash::v1::InboundMode::INBOUND_MODE_DROP);
  if (!network.has_dns()) network.set_dns(leash::v1::DnsMode::DNS_MODE_FILTER);
  network.mutable_dns_resolvers();  // empty: the host's /etc/resolv.conf

  FillSurface(*out.mutable_filesystem());
  FillSurface(*out.mutable_commands());

  leash::v1::ToolsPolicy& tools = *out.mutable_tools();
  FillSurface(tools);
  for (absl::string_view category : kInspectCategories) {
    tools.mutable_inspect()->insert({std::string(category), DefaultInspectAction(category)});
  }
  if (!tools.has_max_input_bytes()) tools.set_max_input_bytes(kDefaultMaxToolInputBytes);

  leash::v1::LoggingPolicy& logging = *out.mutable_logging();
  if (!logging.has_level()) logging.set_level("info");
  if (!logging.has_decisions()) logging.set_decisions(std::string(kDefaultDecisionLog));

  leash::v1::Enforcers& enforcers = *out.mutable_enforcers();
  if (!enforcers.has_network()) enforcers.set_network(true);
  if (!enforcers.has_filesystem()) enforcers.set_filesystem(true);
  if (!enforcers.has_tools()) enforcers.set_tools(true);
  return out;
}

std::string DecisionLogFile(const leash::v1::Config& floor) {
  if (floor.has_logging() && floor.logging().has_decisions() &&
      floor.logging().decisions() != "stdout") {
    return floor.logging().decisions();
  }
  return std::string(kDefaultDecisionLog);
}

}  // namespace leash::engine
