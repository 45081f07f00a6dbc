#include "engine/compiled_policy.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/network_entry.h"
#include "engine/path_entry.h"

namespace leash::engine {
namespace {

using leash::v1::Mode;

struct Match {
  int id = -1;
  MatchedOn on = MatchedOn::kNone;
};

// The one rule every surface shares: deny wins; blacklist allows the rest; whitelist allows
// only what an allow entry matches.
template <typename Rules, typename MatchFn>
Ruling Rule(const Rules& rules, MatchFn match) {
  Ruling ruling;
  if (Match deny = match(rules.deny); deny.id >= 0) {
    ruling.verdict = Verdict::kBlock;
    ruling.basis = Ruling::Basis::kDenyEntry;
    ruling.entry = rules.deny.entries[deny.id];
    return ruling;
  }
  if (rules.mode == Mode::MODE_BLACKLIST) {
    ruling.verdict = Verdict::kAllow;
    ruling.basis = Ruling::Basis::kNotDenied;
    return ruling;
  }
  if (Match allow = match(rules.allow); allow.id >= 0) {
    ruling.verdict = Verdict::kAllow;
    ruling.basis = Ruling::Basis::kAllowEntry;
    ruling.matched_on = allow.on;
    ruling.entry = rules.allow.entries[allow.id];
    return ruling;
  }
  ruling.verdict = Verdict::kBlock;
  ruling.basis = Ruling::Basis::kNotAllowed;
  return ruling;
}

template <typename Rules, typename MatchFn>
Decision Judge(Surface surface, absl::string_view subject, const Rules& rules, MatchFn match) {
  const Ruling ruling = Rule(rules, match);
  Decision decision;
  decision.verdict = ruling.verdict;
  decision.matched_on = ruling.matched_on;
  AppendReason(surface, subject, ruling, decision.reason);
  return decision;
}

leash::v1::InertEntry Skipped(absl::string_view field, absl::string_view entry,
                              absl::string_view reason) {
  leash::v1::InertEntry inert;
  inert.set_field(std::string(field));
  inert.set_entry(std::string(entry));
  inert.set_reason(std::string(reason));
  return inert;
}

absl::string_view Basename(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == absl::string_view::npos ? path : path.substr(slash + 1);
}

std::string NetworkSubjectText(const NetworkSubject& subject) {
  std::string ip;
  if (subject.ip) {
    ip = FormatIpAddress(*subject.ip);
    if (subject.ip->family == IpAddress::Family::kV6) ip = absl::StrCat("[", ip, "]");
  }
  if (subject.domain.empty()) return absl::StrCat(ip.empty() ? "?" : ip, ":", subject.port);
  if (ip.empty()) return absl::StrCat(subject.domain, ":", subject.port);
  return absl::StrCat(subject.domain, ":", subject.port, " (", ip, ")");
}

}  // namespace

void AppendReason(Surface surface, absl::string_view subject, const Ruling& ruling,
                  std::string& out) {
  absl::StrAppend(&out, SurfaceName(surface), ": ", subject);
  switch (ruling.basis) {
    case Ruling::Basis::kDenyEntry:
      absl::StrAppend(&out, " matches deny entry '", ruling.entry, "'");
      return;
    case Ruling::Basis::kNotDenied:
      out += " not in deny list (blacklist)";
      return;
    case Ruling::Basis::kAllowEntry:
      absl::StrAppend(&out, " matches allow entry '", ruling.entry, "'");
      return;
    case Ruling::Basis::kNotAllowed:
      out += " not in allow list (whitelist)";
      return;
    case Ruling::Basis::kAncestorOfAllowEntry:
      absl::StrAppend(&out, " is a directory above allow entry '", ruling.entry,
                      "' (listed by name only)");
      return;
    case Ruling::Basis::kNameNotRootControlled:
      absl::StrAppend(
          &out, " matches allow entry '", ruling.entry,
          "' by name only, and a name entry matches only a program owned by root and writable "
          "by nobody else, in a folder only root can write; this one could have been made or "
          "changed by someone else (a copy, a rename, a download). List its absolute path to "
          "allow it as written");
      return;
  }
}

CompiledPolicy CompiledPolicy::Compile(const leash::v1::Config& config,
                                       const std::vector<CommandLink>& links,
                                       const leash::v1::Config* audit_above) {
  CompiledPolicy policy;
  if (audit_above != nullptr) {
    // Only the surfaces the wire message carries: the others have nothing above their audit.
    policy.above_for_[leash::v1::SURFACE_NETWORK] = audit_above->has_network();
    policy.above_for_[leash::v1::SURFACE_FILESYSTEM] = audit_above->has_filesystem();
    policy.above_for_[leash::v1::SURFACE_COMMANDS] = audit_above->has_commands();
    policy.above_for_[leash::v1::SURFACE_TOOLS] = audit_above->has_tools();
    policy.above_ = std::make_shared<const CompiledPolicy>(Compile(*audit_above, links));
  }
  policy.config_ = WithDefaults(config);
  policy.fail_mode_ = EffectiveFailMode(policy.config_);
  const leash::v1::Config& c = policy.config_;

  auto add_network = [&](const leash::v1::EntryList& list, absl::string_view field,
                         NetworkList& out) {
    for (const std::string& raw : list.entries()) {
      absl::StatusOr<NetworkEntry> entry = ParseNetworkEntry(raw);
      if (!entry.ok()) {
        policy.skipped_.push_back(Skipped(field, raw, entry.status().message()));
        continue;
      }
      const int id = static_cast<int>(out.entries.size());
      out.entries.push_back(raw);
      if (entry->kind == NetworkEntry::Kind::kNetwork) {
        out.networks.Add(entry->network, entry->prefix_len, entry->port, id);
      } else {
        out.domains.Add(entry->host, entry->kind == NetworkEntry::Kind::kWildcard, entry->port,
                        id);
      }
    }
  };
  policy.network_.mode = c.network().mode();
  add_network(c.network().allow(), "network.allow", policy.network_.allow);
  add_network(c.network().deny(), "network.deny", policy.network_.deny);

  auto add_paths = [&](const leash::v1::EntryList& list, absl::string_view field,
                       PathList& out) {
    for (const std::string& raw : list.entries()) {
      absl::StatusOr<PathEntry> entry = ParsePathEntry(raw);
      if (!entry.ok()) {
        policy.skipped_.push_back(Skipped(field, raw, entry.status().message()));
        continue;
      }
      const int id = static_cast<int>(out.entries.size());
      out.entries.push_back(raw);
      if (entry->kind == PathEntry::Kind::kGlob) {
        out.trie.AddGlob(entry->path, id);
      } else {
        out.trie.AddPrefix(entry->path, id);
      }
    }
  };
  policy.filesystem_.mode = c.filesystem().mode();
  add_paths(c.filesystem().allow(), "filesystem.allow", policy.filesystem_.allow);
  add_paths(c.filesystem().deny(), "filesystem.deny", policy.filesystem_.deny);

  auto add_commands = [&](const leash::v1::EntryList& list, absl::string_view field,
                          NameList& out) {
    for (const std::string& raw : list.entries()) {
      absl::StatusOr<CommandEntry> entry = ParseCommandEntry(raw);
      if (!entry.ok()) {
        policy.skipped_.push_back(Skipped(field, raw, entry.status().message()));
        continue;
      }
      const int id = static_cast<int>(out.entries.size());
      out.entries.push_back(raw);
      (entry->is_path ? out.paths : out.names).insert({entry->value, id});
    }
  };
  policy.commands_.mode = c.commands().mode();
  add_commands(c.commands().allow(), "commands.allow", policy.commands_.allow);
  add_commands(c.commands().deny(), "commands.deny", policy.commands_.deny);
  for (const CommandLink& link : links) {
    for (NameList* list : {&policy.commands_.allow, &policy.commands_.deny}) {
      if (auto it = list->names.find(link.name); it != list->names.end()) {
        list->link_targets.insert({link.target, it->second});
      }
    }
  }

  auto add_tools = [&](const leash::v1::EntryList& list, absl::string_view field,
                       NameList& out) {
    for (const std::string& raw : list.entries()) {
      absl::StatusOr<std::string> entry = ParseToolEntry(raw);
      if (!entry.ok()) {
        policy.skipped_.push_back(Skipped(field, raw, entry.status().message()));
        continue;
      }
      const int id = static_cast<int>(out.entries.size());
      out.entries.push_back(raw);
      out.names.insert({*entry, id});
    }
  };
  policy.tools_.mode = c.tools().mode();
  add_tools(c.tools().allow(), "tools.allow", policy.tools_.allow);
  add_tools(c.tools().deny(), "tools.deny", policy.tools_.deny);
  return policy;
}

Decision CompiledPolicy::DecideNetwork(const NetworkSubject& subject) const {
  NetworkSubject judged = subject;
  judged.domain = NormalizeHost(subject.domain);
  // An IP literal where a name was expected (an IP-literal SNI or Host) names nothing a
  // domain entry could match; the decision is made on the destination address alone.
  if (ParseIpAddress(judged.domain)) judged.domain.clear();
  const std::string text = NetworkSubjectText(judged);
  if (!judged.domain.empty()) {
    if (absl::Status host = CheckHostName(judged.domain); !host.ok()) {
      Decision decision;
      decision.reason = absl::StrCat("network: ", text, " has an invalid host name (",
                                     host.message(), ")");
      return decision;
    }
  }
  return Judge(leash::v1::SURFACE_NETWORK, text, network_, [&](const NetworkList& list) {
    // An address match is preferred: the operator allowed that address itself.
    if (judged.ip) {
      if (int id = list.networks.Match(*judged.ip, judged.port); id >= 0) {
        return Match{id, MatchedOn::kIp};
      }
    }
    return Match{list.domains.Match(judged.domain, judged.port), MatchedOn::kDomain};
  });
}

Decision CompiledPolicy::DecideDnsName(absl::string_view name) const {
  const std::string host = NormalizeHost(name);
  const std::string text = absl::StrCat("DNS name ", host.empty() ? "." : host);
  if (absl::Status valid = CheckHostName(host); !valid.ok()) {
    Decision decision;
    decision.reason = absl::StrCat("network: ", text, " is not a host name a policy entry could "
                                   "match (", valid.message(), ")");
    return decision;
  }
  // Deny entries count only when they hold on every port; allow entries on any port: the
  // question is whether the name could be reached at all.
  return Judge(leash::v1::SURFACE_NETWORK, text, network_, [&](const NetworkList& list) {
    const bool deny_list = &list == &network_.deny;
    return Match{deny_list ? list.domains.Match(host, 0) : list.domains.MatchOnSomePort(host),
                 MatchedOn::kDomain};
  });
}

Decision CompiledPolicy::DecidePath(absl::string_view path) const {
  // The kernel's paths (fswatch) are already normal: judged as they are, with no copy.
  absl::StatusOr<std::string> normalized;
  if (!IsNormalAbsolutePath(path)) {
    normalized = NormalizeAbsolutePath(path);
    if (!normalized.ok()) {
      return FailDecision(fail_mode_, leash::v1::SURFACE_FILESYSTEM,
                          normalized.status().message());
    }
    path = *normalized;
  }
  return Judge(leash::v1::SURFACE_FILESYSTEM, path, filesystem_,
               [&](const PathList& list) { return Match{list.trie.Match(path)}; });
}

Ruling CompiledPolicy::RuleOnNormalPath(absl::string_view path) const {
  return Rule(filesystem_, [&](const PathList& list) { return Match{list.trie.Match(path)}; });
}

Ruling CompiledPolicy::RuleOnNormalDirectory(absl::string_view path) const {
  Ruling ruling = RuleOnNormalPath(path);
  if (ruling.basis != Ruling::Basis::kNotAllowed) return ruling;
  if (const int below = filesystem_.allow.trie.EntryBelow(path); below >= 0) {
    ruling.verdict = Verdict::kAllow;
    ruling.basis = Ruling::Basis::kAncestorOfAllowEntry;
    ruling.entry = filesystem_.allow.entries[below];
  }
  return ruling;
}

Decision CompiledPolicy::DecideDirectory(absl::string_view path) const {
  absl::StatusOr<std::string> normalized = NormalizeAbsolutePath(path);
  if (!normalized.ok()) {
    return FailDecision(fail_mode_, leash::v1::SURFACE_FILESYSTEM, normalized.status().message());
  }
  const Ruling ruling = RuleOnNormalDirectory(*normalized);
  Decision decision;
  decision.verdict = ruling.verdict;
  AppendReason(leash::v1::SURFACE_FILESYSTEM, *normalized, ruling, decision.reason);
  return decision;
}

Decision CompiledPolicy::DecideCommand(absl::string_view binary, ProgramOrigin origin) const {
  std::string judged(binary);
  if (!binary.empty() && binary.front() == '/') {
    judged = NormalizeAbsolutePath(binary).value();
  } else if (binary.empty() || binary.find('/') != absl::string_view::npos) {
    return FailDecision(fail_mode_, leash::v1::SURFACE_COMMANDS,
                        absl::StrCat("'", binary, "' is neither an absolute path nor a name"));
  }
  const bool absolute = judged.front() == '/';
  auto by_path = [&](const NameList& list) {
    if (!absolute) return -1;
    auto it = list.paths.find(judged);
    return it == list.paths.end() ? -1 : it->second;
  };
  auto by_name = [&](const NameList& list) {
    if (auto it = list.names.find(Basename(judged)); it != list.names.end()) return it->second;
    if (!absolute) return -1;
    auto it = list.link_targets.find(judged);
    return it == list.link_targets.end() ? -1 : it->second;
  };
  Ruling ruling;
  if (int id = by_path(commands_.deny); id >= 0 || (id = by_name(commands_.deny)) >= 0) {
    ruling.basis = Ruling::Basis::kDenyEntry;
    ruling.entry = commands_.deny.entries[id];
  } else if (commands_.mode == Mode::MODE_BLACKLIST) {
    ruling.verdict = Verdict::kAllow;
    ruling.basis = Ruling::Basis::kNotDenied;
  } else if (int id = by_path(commands_.allow); id >= 0) {
    ruling.verdict = Verdict::kAllow;
    ruling.basis = Ruling::Basis::kAllowEntry;
    ruling.entry = commands_.allow.entries[id];
  } else if ((id = by_name(commands_.allow)) >= 0) {
    const bool root_controlled = origin == ProgramOrigin::kRootControlled;
    ruling.verdict = root_controlled ? Verdict::kAllow : Verdict::kBlock;
    ruling.basis = root_controlled ? Ruling::Basis::kAllowEntry
                                   : Ruling::Basis::kNameNotRootControlled;
    ruling.entry = commands_.allow.entries[id];
  }
  Decision decision;
  decision.verdict = ruling.verdict;
  AppendReason(leash::v1::SURFACE_COMMANDS, judged, ruling, decision.reason);
  return decision;
}

Decision CompiledPolicy::DecideTool(absl::string_view name) const {
  return Judge(leash::v1::SURFACE_TOOLS, name, tools_, [&](const NameList& list) {
    auto it = list.names.find(name);
    return Match{it == list.names.end() ? -1 : it->second};
  });
}

const CompiledPolicy* CompiledPolicy::audit_above(Surface surface) const {
  if (above_ == nullptr || surface < 0 || surface >= 5 || !above_for_[surface]) return nullptr;
  return audited(surface) ? above_.get() : nullptr;
}

Decision CompiledPolicy::UnderAudit(
    Surface surface, Decision decision,
    absl::FunctionRef<bool(const CompiledPolicy& above)> above_blocks) const {
  if (decision.allowed() || !audited(surface)) return decision;
  if (const CompiledPolicy* above = audit_above(surface); above != nullptr && above_blocks(*above)) {
    decision.kept_under_audit = true;
    return decision;
  }
  return engine::UnderAudit(std::move(decision), /*audited=*/true);
}

bool CompiledPolicy::audited(Surface surface) const {
  switch (surface) {
    case leash::v1::SURFACE_NETWORK:
      return config_.network().audit();
    case leash::v1::SURFACE_FILESYSTEM:
      return config_.filesystem().audit();
    case leash::v1::SURFACE_COMMANDS:
      return config_.commands().audit();
    case leash::v1::SURFACE_TOOLS:
      return config_.tools().audit();
    default:
      return false;
  }
}

}  // namespace leash::engine
