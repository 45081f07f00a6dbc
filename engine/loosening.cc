#include "engine/loosening.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/config_defaults.h"
#include "engine/config_yaml.h"
#include "engine/scope.h"

namespace leash::engine {
namespace {

using leash::v1::Config;
using leash::v1::EntryList;
using leash::v1::InspectAction;
using leash::v1::Mode;

constexpr absl::string_view kSurfaces[] = {"network", "filesystem", "commands", "tools"};
constexpr absl::string_view kResolvConf = "/etc/resolv.conf";

FieldChange Change(std::string field, std::string value, Effect effect, std::string message) {
  FieldChange change;
  change.ack_token = effect == Effect::kLoosen ? absl::StrCat(field, ":", value) : "";
  change.field = std::move(field);
  change.value = std::move(value);
  change.effect = effect;
  change.message = std::move(message);
  return change;
}

// Entries of `a` that `b` lacks, in `a`'s order, each once.
std::vector<std::string> Missing(const EntryList& a, const EntryList& b) {
  absl::flat_hash_set<absl::string_view> in_b(b.entries().begin(), b.entries().end());
  absl::flat_hash_set<absl::string_view> seen;
  std::vector<std::string> out;
  for (const std::string& entry : a.entries()) {
    if (!in_b.contains(entry) && seen.insert(entry).second) out.push_back(entry);
  }
  return out;
}

std::string DescribeFailMode(const Config& config) {
  if (EffectiveFailMode(config) == FailMode::kOpen) return "open";
  if (config.fail_mode() == "closed") return "closed";
  return absl::StrCat("'", config.fail_mode(), "' (read as closed)");
}

void ClassifyFailMode(const Config& before, const Config& after, std::vector<FieldChange>& out) {
  if (before.fail_mode() == after.fail_mode()) return;
  const FailMode b = EffectiveFailMode(before);
  const FailMode a = EffectiveFailMode(after);
  const std::string from = DescribeFailMode(before);
  const std::string to = DescribeFailMode(after);
  if (b == FailMode::kClosed && a == FailMode::kOpen) {
    out.push_back(Change("fail_mode", "open", Effect::kLoosen,
                         absl::StrCat("fail_mode goes from ", from,
                                      " to open: when an enforcer cannot decide, it allows")));
  } else if (b == FailMode::kOpen && a == FailMode::kClosed) {
    out.push_back(Change("fail_mode", after.fail_mode(), Effect::kTighten,
                         absl::StrCat("fail_mode goes from open to ", to,
                                      ": when an enforcer cannot decide, it blocks")));
  } else {
    out.push_back(Change("fail_mode", after.fail_mode(), Effect::kNeutral,
                         absl::StrCat("fail_mode goes from ", from, " to ", to,
                                      ": both are read as closed")));
  }
}

// mode, allow and deny of one surface.
template <typename Surface>
void ClassifySurface(absl::string_view name, const Surface& before, const Surface& after,
                     std::vector<FieldChange>& out) {
  const bool was_whitelist = before.mode() == leash::v1::MODE_WHITELIST;
  const bool is_whitelist = after.mode() == leash::v1::MODE_WHITELIST;
  const std::string mode_field = absl::StrCat(name, ".mode");
  if (was_whitelist && !is_whitelist) {
    out.push_back(Change(mode_field, "blacklist", Effect::kLoosen,
                         absl::StrCat(name,
                                      " goes from whitelist (default-deny) to blacklist "
                                      "(default-allow): everything its deny list does not name "
                                      "is allowed")));
  } else if (!was_whitelist && is_whitelist) {
    out.push_back(Change(mode_field, "whitelist", Effect::kTighten,
                         absl::StrCat(name,
                                      " goes from blacklist (default-allow) to whitelist "
                                      "(default-deny): only its allow list is allowed")));
  }

  // Audit keeps deciding but stops refusing, so turning it on widens what the subject may do
  // exactly as far as the surface's policy would have narrowed it.
  if (before.audit() != after.audit()) {
    const std::string audit_field = absl::StrCat(name, ".audit");
    if (after.audit()) {
      out.push_back(Change(audit_field, "true", Effect::kLoosen,
                           absl::StrCat(name,
                                        " goes into audit: what its policy would block is "
                                        "logged (enforced: false) and allowed")));
    } else {
      out.push_back(Change(audit_field, "false", Effect::kTighten,
                           absl::StrCat(name, " leaves audit: what its policy blocks is blocked")));
    }
  }

  const std::string allow_field = absl::StrCat(name, ".allow");
  for (const std::string& entry : Missing(after.allow(), before.allow())) {
    if (was_whitelist && is_whitelist) {
      out.push_back(Change(allow_field, entry, Effect::kLoosen,
                           absl::StrCat(allow_field, " gains '", entry, "' while ", name,
                                        " is in whitelist mode (default-deny): '", entry,
                                        "' becomes allowed")));
    } else if (!is_whitelist) {
      out.push_back(Change(allow_field, entry, Effect::kNeutral,
                           absl::StrCat(allow_field, " gains '", entry, "', but ", name,
                                        " is in blacklist mode, where the allow list is never "
                                        "consulted")));
    } else {
      out.push_back(Change(allow_field, entry, Effect::kNeutral,
                           absl::StrCat(allow_field, " gains '", entry, "' as ", name,
                                        " leaves blacklist mode, where it was already allowed")));
    }
  }
  for (const std::string& entry : Missing(before.allow(), after.allow())) {
    if (is_whitelist) {
      out.push_back(Change(allow_field, entry, Effect::kTighten,
                           absl::StrCat(allow_field, " loses '", entry,
                                        "': it is no longer allowed")));
    } else {
      out.push_back(Change(allow_field, entry, Effect::kNeutral,
                           absl::StrCat(allow_field, " loses '", entry, "', but ", name,
                                        " is in blacklist mode, where the allow list is never "
                                        "consulted")));
    }
  }

  const std::string deny_field = absl::StrCat(name, ".deny");
  for (const std::string& entry : Missing(before.deny(), after.deny())) {
    out.push_back(Change("unset.deny", absl::StrCat(name, ":", entry), Effect::kLoosen,
                         absl::StrCat(deny_field, " loses '", entry,
                                      "' (unset.deny): it is no longer blocked")));
  }
  for (const std::string& entry : Missing(after.deny(), before.deny())) {
    out.push_back(Change(deny_field, entry, Effect::kTighten,
                         absl::StrCat(deny_field, " gains '", entry, "': it is blocked")));
  }
}

void ClassifyNetworkExtras(const leash::v1::NetworkPolicy& before,
                           const leash::v1::NetworkPolicy& after, std::vector<FieldChange>& out) {
  if (before.udp() != after.udp()) {
    if (after.udp() == leash::v1::UDP_MODE_ALLOW) {
      out.push_back(Change("network.udp", "allow", Effect::kLoosen,
                           "network.udp goes from drop to allow: the subject's UDP leaves "
                           "unfiltered (QUIC, DNS to any server)"));
    } else {
      out.push_back(Change("network.udp", "drop", Effect::kTighten,
                           "network.udp goes from allow to drop: the subject's UDP is dropped "
                           "(DNS to its resolvers excepted)"));
    }
  }

  if (before.inbound() != after.inbound()) {
    if (after.inbound() == leash::v1::INBOUND_MODE_ALLOW) {
      out.push_back(Change("network.inbound", "allow", Effect::kLoosen,
                           "network.inbound goes from drop to allow: a peer off this host that "
                           "connects to the subject's listener is served, and the subject's "
                           "answers leave unjudged by the proxy"));
    } else {
      out.push_back(Change("network.inbound", "drop", Effect::kTighten,
                           "network.inbound goes from allow to drop: the subject serves no "
                           "connection from a peer off this host"));
    }
  }

  if (before.dns() != after.dns()) {
    if (after.dns() == leash::v1::DNS_MODE_RESOLVERS) {
      out.push_back(Change("network.dns", "resolvers", Effect::kLoosen,
                           "network.dns goes from filter to resolvers: the subject's DNS goes to "
                           "the resolvers unjudged, so any name, a denied one too, is asked "
                           "(and data can leave in the names asked)"));
    } else {
      out.push_back(Change("network.dns", "filter", Effect::kTighten,
                           "network.dns goes from resolvers to filter: only names the subject's "
                           "network policy could allow are resolved"));
    }
  }

  const EntryList& b = before.dns_resolvers();
  const EntryList& a = after.dns_resolvers();
  const std::string field = "network.dns_resolvers";
  // An empty list means the host's own resolvers (/etc/resolv.conf).
  if (b.entries_size() > 0 && a.entries_size() == 0) {
    out.push_back(Change(field, std::string(kResolvConf), Effect::kLoosen,
                         absl::StrCat(field, " is emptied: UDP/53 to the host's resolvers (",
                                      kResolvConf, ") is let through the drop")));
  } else if (b.entries_size() == 0 && a.entries_size() > 0) {
    out.push_back(Change(field, std::string(kResolvConf), Effect::kTighten,
                         absl::StrCat(field, " replaces the host's resolvers (", kResolvConf,
                                      "): UDP/53 to them is dropped")));
  }
  for (const std::string& entry : Missing(a, b)) {
    out.push_back(Change(field, entry, Effect::kLoosen,
                         absl::StrCat(field, " gains ", entry,
                                      ": UDP/53 to it is let through the drop")));
  }
  for (const std::string& entry : Missing(b, a)) {
    out.push_back(Change(field, entry, Effect::kTighten,
                         absl::StrCat(field, " loses ", entry, ": UDP/53 to it is dropped")));
  }
}

// Strictness of an inspection action: block > log > allow.
int Strictness(InspectAction action) {
  switch (action) {
    case leash::v1::INSPECT_ACTION_BLOCK:
      return 2;
    case leash::v1::INSPECT_ACTION_LOG:
      return 1;
    default:
      return 0;
  }
}

absl::string_view ActionOutcome(InspectAction action) {
  switch (action) {
    case leash::v1::INSPECT_ACTION_BLOCK:
      return "blocked";
    case leash::v1::INSPECT_ACTION_LOG:
      return "let through and logged";
    default:
      return "let through unrecorded";
  }
}

void ClassifyToolsExtras(const leash::v1::ToolsPolicy& before, const leash::v1::ToolsPolicy& after,
                         std::vector<FieldChange>& out) {
  for (absl::string_view category : kInspectCategories) {
    const std::string key(category);
    auto b_it = before.inspect().find(key);
    auto a_it = after.inspect().find(key);
    const InspectAction b = b_it == before.inspect().end() ? leash::v1::INSPECT_ACTION_UNSPECIFIED
                                                            : b_it->second;
    const InspectAction a = a_it == after.inspect().end() ? leash::v1::INSPECT_ACTION_UNSPECIFIED
                                                           : a_it->second;
    if (Strictness(a) == Strictness(b)) continue;
    const std::string field = absl::StrCat("tools.inspect.", category);
    const bool lowered = Strictness(a) < Strictness(b);
    out.push_back(Change(
        field, std::string(InspectActionName(a)), lowered ? Effect::kLoosen : Effect::kTighten,
        absl::StrCat(field, " is ", lowered ? "lowered" : "raised", " from ", InspectActionName(b),
                     " to ", InspectActionName(a), ": a ", category,
                     " match in a tool's input is ", ActionOutcome(a), " instead of ",
                     ActionOutcome(b))));
  }
  if (before.max_input_bytes() != after.max_input_bytes()) {
    const bool raised = after.max_input_bytes() > before.max_input_bytes();
    out.push_back(Change(
        "tools.max_input_bytes", absl::StrCat(after.max_input_bytes()),
        raised ? Effect::kLoosen : Effect::kTighten,
        raised ? absl::StrCat("tools.max_input_bytes is raised from ", before.max_input_bytes(),
                              " to ", after.max_input_bytes(),
                              ": tool inputs up to that size are inspected and can pass instead "
                              "of being blocked")
               : absl::StrCat("tools.max_input_bytes is lowered from ", before.max_input_bytes(),
                              " to ", after.max_input_bytes(),
                              ": larger tool inputs are blocked under fail_mode closed")));
  }
}

void ClassifyEnforcer(absl::string_view name, absl::string_view what, bool before, bool after,
                      std::vector<FieldChange>& out) {
  if (before == after) return;
  const std::string field = absl::StrCat("enforcers.", name);
  if (!after) {
    out.push_back(Change(field, "false", Effect::kLoosen,
                         absl::StrCat(field, " is turned off: ", what, " not enforced at all")));
  } else {
    out.push_back(
        Change(field, "true", Effect::kTighten, absl::StrCat(field, " is turned on: ", what,
                                                             " enforced")));
  }
}

void ClassifyNeutralString(absl::string_view field, const std::string& before,
                           const std::string& after, std::vector<FieldChange>& out) {
  if (before == after) return;
  out.push_back(Change(std::string(field), after, Effect::kNeutral,
                       absl::StrCat(field, " goes from '", before, "' to '", after,
                                    "': it does not change what a subject may do")));
}

bool HasControlCharacter(absl::string_view text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    const unsigned char u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

const std::vector<std::string>& AckFields() {
  static const std::vector<std::string>* fields = [] {
    auto* f = new std::vector<std::string>{"fail_mode"};
    for (absl::string_view surface : kSurfaces) {
      f->push_back(absl::StrCat(surface, ".mode"));
      f->push_back(absl::StrCat(surface, ".allow"));
      f->push_back(absl::StrCat(surface, ".audit"));
    }
    f->push_back("unset.deny");
    f->push_back("network.udp");
    f->push_back("network.inbound");
    f->push_back("network.dns");
    f->push_back("network.dns_resolvers");
    for (absl::string_view category : kInspectCategories) {
      f->push_back(absl::StrCat("tools.inspect.", category));
    }
    f->push_back("tools.max_input_bytes");
    for (absl::string_view enforcer : {"network", "filesystem", "tools"}) {
      f->push_back(absl::StrCat("enforcers.", enforcer));
    }
    f->push_back("fail_closed");
    return f;
  }();
  return *fields;
}

}  // namespace

absl::string_view EffectName(Effect effect) {
  switch (effect) {
    case Effect::kTighten:
      return "tighten";
    case Effect::kLoosen:
      return "loosen";
    default:
      return "neutral";
  }
}

std::vector<FieldChange> ClassifyChanges(const Config& before, const Config& after) {
  std::vector<FieldChange> out;
  ClassifyFailMode(before, after, out);
  ClassifySurface("network", before.network(), after.network(), out);
  ClassifyNetworkExtras(before.network(), after.network(), out);
  ClassifySurface("filesystem", before.filesystem(), after.filesystem(), out);
  ClassifySurface("commands", before.commands(), after.commands(), out);
  ClassifySurface("tools", before.tools(), after.tools(), out);
  ClassifyToolsExtras(before.tools(), after.tools(), out);
  ClassifyEnforcer("network", "the subject's network is", before.enforcers().network(),
                   after.enforcers().network(), out);
  ClassifyEnforcer("filesystem", "the subject's file opens and command execs are",
                   before.enforcers().filesystem(), after.enforcers().filesystem(), out);
  ClassifyEnforcer("tools", "the subject's tool calls are", before.enforcers().tools(),
                   after.enforcers().tools(), out);
  ClassifyNeutralString("logging.level", before.logging().level(), after.logging().level(), out);
  ClassifyNeutralString("logging.decisions", before.logging().decisions(),
                        after.logging().decisions(), out);
  ClassifyNeutralString("user", before.user(), after.user(), out);
  return out;
}

std::vector<FieldChange> Loosenings(const Config& before, const Config& after) {
  std::vector<FieldChange> all = ClassifyChanges(before, after);
  std::vector<FieldChange> out;
  for (FieldChange& change : all) {
    if (change.effect == Effect::kLoosen) out.push_back(std::move(change));
  }
  return out;
}

FieldChange FailClosedRemoval(absl::string_view scope, absl::string_view profile,
                              absl::string_view why) {
  return Change("fail_closed", std::string(profile), Effect::kLoosen,
                absl::StrCat("removing the binding of ", scope, " to '", profile,
                             "' returns it from fail-closed (denied everything; ", why,
                             ") to the policy beneath it"));
}

absl::StatusOr<AckToken> ParseAckToken(absl::string_view text) {
  const size_t colon = text.find(':');
  if (colon == absl::string_view::npos || colon == 0 || colon + 1 == text.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ack '", text, "' is not <field>:<value> (e.g. --ack 'network.allow:openai.com')"));
  }
  AckToken token{std::string(text.substr(0, colon)), std::string(text.substr(colon + 1))};
  const std::vector<std::string>& fields = AckFields();
  if (std::find(fields.begin(), fields.end(), token.field) == fields.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ack '", text, "': '", token.field,
                     "' is not a field that takes consent (one of: ", absl::StrJoin(fields, ", "),
                     ")"));
  }
  if (HasControlCharacter(token.value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("ack for ", token.field, " carries a control character in its value"));
  }
  if (token.field == "unset.deny") {
    absl::string_view value = token.value;
    const bool qualified = std::any_of(std::begin(kSurfaces), std::end(kSurfaces),
                                       [&](absl::string_view surface) {
                                         return absl::StartsWith(value, surface) &&
                                                value.size() > surface.size() + 1 &&
                                                value[surface.size()] == ':';
                                       });
    if (!qualified) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ack '", text,
          "': unset.deny takes <surface>:<entry> (e.g. unset.deny:commands:ssh), surface one of "
          "network, filesystem, commands, tools"));
    }
  }
  return token;
}

absl::StatusOr<AgentAck> ParseAgentAck(absl::string_view text) {
  const size_t equals = text.find('=');
  if (equals == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ack '", text,
        "' names no agent; a profile save takes agent:<account>=<field>:<value> (e.g. --ack "
        "'agent:leash-iris=network.allow:openai.com')"));
  }
  const absl::string_view scope_text = text.substr(0, equals);
  const absl::string_view token_text = text.substr(equals + 1);
  if (scope_text == "global") {
    return absl::InvalidArgumentError(absl::StrCat(
        "ack '", text,
        "': consent for the global binding is never taken by a profile save; it goes through "
        "leash bind global"));
  }
  absl::StatusOr<Scope> scope = ParseScope(scope_text);
  if (!scope.ok()) return absl::InvalidArgumentError(absl::StrCat("ack '", text, "': ",
                                                                  scope.status().message()));
  if (scope->is_global()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ack '", text, "': consent for the global binding goes through leash bind global"));
  }
  absl::StatusOr<AckToken> token = ParseAckToken(token_text);
  if (!token.ok()) return token.status();
  return AgentAck{scope->account, token->ToString()};
}

}  // namespace leash::engine
