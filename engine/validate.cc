#include "engine/validate.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "engine/config_defaults.h"
#include "engine/guarded_ranges.h"
#include "engine/network_entry.h"
#include "engine/inert_entries.h"
#include "engine/path_entry.h"

namespace leash::engine {
namespace {

using leash::v1::Finding;
using leash::v1::Severity;

constexpr absl::string_view kDenyRule =
    "a floor deny holds for every subject, because a profile's deny list is added to the "
    "floor's and never replaces it";

Finding MakeFinding(Severity severity, absl::string_view source, absl::string_view field,
                    absl::string_view entry, std::string message) {
  Finding finding;
  finding.set_severity(severity);
  finding.set_source(std::string(source));
  finding.set_field(std::string(field));
  finding.set_entry(std::string(entry));
  finding.set_message(std::move(message));
  return finding;
}

template <typename Surface>
void CheckBlacklistAllow(const Surface& surface, absl::string_view name,
                         absl::string_view source, std::vector<Finding>& out) {
  if (!surface.has_mode() || surface.mode() != leash::v1::MODE_BLACKLIST) return;
  const int count = surface.allow().entries_size();
  if (count == 0) return;
  out.push_back(MakeFinding(
      leash::v1::SEVERITY_ERROR, source, absl::StrCat(name, ".allow"), "",
      absl::StrCat(name, " is in blacklist mode (default-allow), so its allow list (", count,
                   count == 1 ? " entry" : " entries",
                   ") is never consulted; remove it, or switch to whitelist with `leash ", name,
                   " mode whitelist`")));
}

// One surface of ValidateProfileDenies.
template <typename Surface>
void CheckDeniesTheFloorHas(const Surface& floor, const Surface& profile, absl::string_view name,
                            absl::string_view source, std::vector<Finding>& out) {
  if (!profile.has_deny()) return;
  const std::string field = absl::StrCat(name, ".deny");
  const int floor_count = floor.deny().entries_size();
  if (profile.deny().entries_size() == 0 && floor_count > 0) {
    out.push_back(MakeFinding(
        leash::v1::SEVERITY_INFO, source, field, "",
        absl::StrCat("an empty ", field, " removes none of the floor's ", floor_count,
                     floor_count == 1 ? " entry" : " entries", ": ", kDenyRule)));
    return;
  }
  const absl::flat_hash_set<absl::string_view> in_floor(floor.deny().entries().begin(),
                                                        floor.deny().entries().end());
  absl::flat_hash_set<absl::string_view> said;
  for (const std::string& entry : profile.deny().entries()) {
    if (!in_floor.contains(entry) || !said.insert(entry).second) continue;
    out.push_back(MakeFinding(
        leash::v1::SEVERITY_INFO, source, field, entry,
        absl::StrCat("'", entry, "' is already in the floor's ", field,
                     ", so listing it here changes nothing: ", kDenyRule)));
  }
}

}  // namespace

namespace {

// The guarded addresses and ranges (engine/guarded_ranges.h) an IP/CIDR allow entry opens to
// a name: each one the entry holds or lies inside, in the family the matcher reads it in.
std::vector<std::string> GuardedRangesOpenedBy(const NetworkEntry& entry) {
  std::vector<std::string> opened;
  for (const GuardedRangeEntry& range : GuardedRanges()) {
    if (range.network.family != entry.network.family) continue;
    const int common = std::min(range.prefix_len, entry.prefix_len);
    if (!(MaskAddress(range.network, common) == MaskAddress(entry.network, common))) continue;
    const absl::string_view text = absl::StripPrefix(range.text, "in ");
    opened.push_back(range.prefix_len == range.network.bit_length()
                         ? absl::StrCat(FormatIpAddress(range.network), ": ", text)
                         : std::string(text));
  }
  return opened;
}

void CheckGuardedAllowEntries(const leash::v1::Config& config, absl::string_view source,
                              std::vector<Finding>& out) {
  if (config.network().mode() == leash::v1::MODE_BLACKLIST) return;  // allow not consulted
  for (const std::string& raw : config.network().allow().entries()) {
    absl::StatusOr<NetworkEntry> entry = ParseNetworkEntry(raw);
    if (!entry.ok() || entry->kind != NetworkEntry::Kind::kNetwork) continue;
    const std::vector<std::string> opened = GuardedRangesOpenedBy(*entry);
    if (opened.empty()) continue;
    const std::string list = absl::StrJoin(opened, "; ");  // a short fixed table: all of it
    out.push_back(MakeFinding(
        leash::v1::SEVERITY_WARNING, source, "network.allow", raw,
        absl::StrCat("allow entry '", raw, "' opens addresses the proxy's destination guard keeps "
                     "names away from (", list,
                     "): a name allowed by another entry that resolves there (DNS rebinding, a "
                     "zone the agent controls) is connected to as well; keep it only if the agent "
                     "must reach them")));
  }
}

}  // namespace

std::vector<Finding> ValidateProfileDenies(const leash::v1::Config& floor,
                                           const leash::v1::Config& profile,
                                           absl::string_view source) {
  std::vector<Finding> out;
  CheckDeniesTheFloorHas(floor.network(), profile.network(), "network", source, out);
  CheckDeniesTheFloorHas(floor.filesystem(), profile.filesystem(), "filesystem", source, out);
  CheckDeniesTheFloorHas(floor.commands(), profile.commands(), "commands", source, out);
  CheckDeniesTheFloorHas(floor.tools(), profile.tools(), "tools", source, out);
  return out;
}

std::vector<Finding> ValidateBlacklistAllow(const leash::v1::Config& config,
                                            absl::string_view source) {
  std::vector<Finding> out;
  CheckBlacklistAllow(config.network(), "network", source, out);
  CheckBlacklistAllow(config.filesystem(), "filesystem", source, out);
  CheckBlacklistAllow(config.commands(), "commands", source, out);
  CheckBlacklistAllow(config.tools(), "tools", source, out);
  return out;
}

std::vector<Finding> ValidateConfig(const leash::v1::Config& config, absl::string_view source) {
  std::vector<Finding> out = ValidateBlacklistAllow(config, source);
  CheckGuardedAllowEntries(config, source, out);

  for (const leash::v1::InertEntry& inert : InertEntries(config)) {
    if (IsInertDeny(inert)) {
      out.push_back(MakeFinding(leash::v1::SEVERITY_CRITICAL, source, inert.field(),
                                inert.entry(),
                                absl::StrCat("deny entry '", inert.entry(),
                                             "' can never match, so it blocks nothing: ",
                                             inert.reason())));
    } else {
      out.push_back(MakeFinding(leash::v1::SEVERITY_WARNING, source, inert.field(),
                                inert.entry(),
                                absl::StrCat("entry '", inert.entry(),
                                             "' can never match: ", inert.reason())));
    }
  }

  const std::pair<absl::string_view, bool> audited[] = {
      {"network", config.network().audit()},
      {"filesystem", config.filesystem().audit()},
      {"commands", config.commands().audit()},
      {"tools", config.tools().audit()},
  };
  for (const auto& [name, on] : audited) {
    if (!on) continue;
    out.push_back(MakeFinding(
        leash::v1::SEVERITY_WARNING, source, absl::StrCat(name, ".audit"), "true",
        absl::StrCat(name,
                     " is in audit: what its policy would block is only logged (action block, "
                     "enforced false), except a deny entry written in a tier above the one "
                     "setting audit (the floor's, the global binding's), which stays enforced "
                     "(enforced true). Turn it off (audit: false) once `leash suggest` has "
                     "turned the log into a policy")));
  }

  if (config.commands().has_mode() && config.commands().mode() == leash::v1::MODE_BLACKLIST) {
    out.push_back(MakeFinding(
        leash::v1::SEVERITY_WARNING, source, "commands.mode", "",
        "commands are in blacklist mode: a deny matches by name and path, so a copied or "
        "renamed binary evades it under another name; use whitelist (default-deny) for honest "
        "blocking, where a name entry (git) allows only a program owned by root and writable "
        "by nobody else, in a folder only root can write"));
  }
  std::vector<std::string> names;
  for (const std::string& raw : config.commands().allow().entries()) {
    absl::StatusOr<CommandEntry> entry = ParseCommandEntry(raw);
    if (entry.ok() && !entry->is_path) names.push_back(raw);
  }
  if (!names.empty() && config.commands().mode() != leash::v1::MODE_BLACKLIST) {
    out.push_back(MakeFinding(
        leash::v1::SEVERITY_INFO, source, "commands.allow", absl::StrJoin(names, ", "),
        absl::StrCat(
            "a name entry (", names.front(),
            ") allows only a program owned by root and writable by nobody else, in a folder "
            "only root can write, or the target of a same-named such link on the system PATH "
            "(python3 -> /usr/bin/python3.11): a copy, a rename or a download of an agent's "
            "never matches it; an absolute entry matches as written, whoever made the file")));
  }
  if (config.has_fail_mode() && !IsKnownFailMode(config.fail_mode())) {
    out.push_back(MakeFinding(
        leash::v1::SEVERITY_WARNING, source, "fail_mode", config.fail_mode(),
        absl::StrCat("fail_mode '", config.fail_mode(),
                     "' is neither closed nor open and is treated as closed")));
  }
  return out;
}

std::vector<Finding> ValidateStart(const leash::v1::Config& floor, absl::string_view path,
                                   const StartFacts& facts) {
  std::vector<Finding> out;
  const std::string& name = floor.user();
  if (name.empty()) {
    out.push_back(MakeFinding(
        leash::v1::SEVERITY_ERROR, "floor", "user", "",
        absl::StrCat(path,
                     " names no user, and leashd does not start without one; run `leash "
                     "init --user <name>`, or add `user: <name>` to it")));
    return out;
  }
  if (!facts.user_exists) return out;
  absl::StatusOr<bool> exists = facts.user_exists(name);
  if (!exists.ok()) {
    out.push_back(MakeFinding(
        leash::v1::SEVERITY_ERROR, "floor", "user", name,
        absl::StrCat("the leashed user '", name, "' cannot be looked up (",
                     exists.status().message(), "), and leashd does not start without it")));
  } else if (!*exists) {
    out.push_back(MakeFinding(leash::v1::SEVERITY_ERROR, "floor", "user", name,
                              absl::StrCat("the leashed user '", name,
                                           "' does not exist, and leashd does not start "
                                           "without it; run `leash init --user ",
                                           name, "`")));
  }
  return out;
}

std::vector<Finding> NewBlockingFindings(const std::vector<Finding>& before,
                                         const std::vector<Finding>& after) {
  const auto key = [](const Finding& finding) {
    return absl::StrCat(finding.severity(), "\x1f", finding.source(), "\x1f", finding.field(),
                        "\x1f", finding.entry());
  };
  absl::flat_hash_set<std::string> had;
  for (const Finding& finding : before) had.insert(key(finding));
  std::vector<Finding> out;
  for (const Finding& finding : after) {
    if (finding.severity() != leash::v1::SEVERITY_ERROR &&
        finding.severity() != leash::v1::SEVERITY_CRITICAL) {
      continue;
    }
    if (had.insert(key(finding)).second) out.push_back(finding);
  }
  return out;
}

bool HasBlockingFinding(const std::vector<Finding>& findings) {
  for (const Finding& finding : findings) {
    if (finding.severity() == leash::v1::SEVERITY_ERROR ||
        finding.severity() == leash::v1::SEVERITY_CRITICAL) {
      return true;
    }
  }
  return false;
}

absl::string_view SeverityName(leash::v1::Severity severity) {
  switch (severity) {
    case leash::v1::SEVERITY_CRITICAL:
      return "critical";
    case leash::v1::SEVERITY_ERROR:
      return "error";
    case leash::v1::SEVERITY_WARNING:
      return "warning";
    default:
      return "info";
  }
}

}  // namespace leash::engine
