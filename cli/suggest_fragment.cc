#include "cli/suggest_fragment.h"

#include <algorithm>
#include <map>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/suggest_collapse.h"
#include "cli/suggest_path_check.h"
#include "engine/config_yaml.h"
#include "engine/decision.h"
#include "engine/inert_entries.h"
#include "engine/validate.h"
#include "google/protobuf/util/message_differencer.h"
#include "yaml-cpp/yaml.h"

namespace leash::cli {
namespace {

using leash::v1::Surface;

constexpr Surface kSurfaces[] = {leash::v1::SURFACE_NETWORK, leash::v1::SURFACE_FILESYSTEM,
                                 leash::v1::SURFACE_COMMANDS, leash::v1::SURFACE_TOOLS};

// The running leash itself, whose ELF interpreter is the host's loader whatever its name...
constexpr const char* kHostPrograms[] = {"/proc/self/exe"};
// ...and the host's programs in its system folders: whatever loader any of them names.
constexpr const char* kSystemFolders[] = {"/usr/bin",       "/usr/sbin",       "/bin", "/sbin",
                                          "/usr/local/bin", "/usr/local/sbin"};

bool IsControl(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }

std::string Times(uint64_t n) { return n == 1 ? "1 time" : absl::StrCat(n, " times"); }

// "12 seen, e.g. ref k3x9q2mw; 2 would-be blocks under audit; covers a, b, c (+4 more)"
std::string Annotation(const SuggestedEntry& entry) {
  std::string text = absl::StrCat(Times(entry.count), ", e.g. ref ", entry.example_ref);
  if (entry.audited > 0) {
    absl::StrAppend(&text, "; ", entry.audited,
                    entry.audited == 1 ? " would-be block" : " would-be blocks", " under audit");
  }
  if (entry.covers.size() > 1) {
    constexpr size_t kShown = 3;
    std::vector<std::string> shown(entry.covers.begin(),
                                   entry.covers.begin() + std::min(kShown, entry.covers.size()));
    absl::StrAppend(&text, "; covers ", entry.covers.size(), " seen: ",
                    absl::StrJoin(shown, ", "));
    if (entry.covers.size() > kShown) {
      absl::StrAppend(&text, ", +", entry.covers.size() - kShown, " more");
    }
  }
  return CommentText(text);
}

// The profile's own `audit: false` on `surface`, over an audit the floor turned on.
void SetAuditOff(leash::v1::Config& config, Surface surface) {
  switch (surface) {
    case leash::v1::SURFACE_NETWORK:
      config.mutable_network()->set_audit(false);
      break;
    case leash::v1::SURFACE_FILESYSTEM:
      config.mutable_filesystem()->set_audit(false);
      break;
    case leash::v1::SURFACE_COMMANDS:
      config.mutable_commands()->set_audit(false);
      break;
    default:
      config.mutable_tools()->set_audit(false);
      break;
  }
}

leash::v1::EntryList* AllowListOf(leash::v1::Config& config, Surface surface) {
  switch (surface) {
    case leash::v1::SURFACE_NETWORK:
      config.mutable_network()->set_mode(leash::v1::MODE_WHITELIST);
      return config.mutable_network()->mutable_allow();
    case leash::v1::SURFACE_FILESYSTEM:
      config.mutable_filesystem()->set_mode(leash::v1::MODE_WHITELIST);
      return config.mutable_filesystem()->mutable_allow();
    case leash::v1::SURFACE_COMMANDS:
      config.mutable_commands()->set_mode(leash::v1::MODE_WHITELIST);
      return config.mutable_commands()->mutable_allow();
    default:
      config.mutable_tools()->set_mode(leash::v1::MODE_WHITELIST);
      return config.mutable_tools()->mutable_allow();
  }
}

}  // namespace

std::string CommentText(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (IsControl(c)) {
      absl::StrAppend(&out, "\\x", absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
    } else {
      out.push_back(c);
    }
  }
  return out;
}

namespace {

std::string NotSuggested(absl::string_view surface, absl::string_view entry, uint64_t count,
                         absl::string_view example_ref, absl::string_view why) {
  return absl::StrCat("not suggested: ", surface, " '", entry, "' (", Times(count),
                      ", e.g. ref ", example_ref, "): ", why);
}

// What one surface's observations suggest; what they cannot is said in `notes`.
std::vector<SuggestedEntry> SuggestSurface(const Observations& observations,
                                           const PathFacts& facts, Surface surface,
                                           std::vector<std::string>& notes) {
  const std::string name(engine::SurfaceName(surface));
  const SeenMap& needed = observations.needed(surface);
  std::vector<SuggestedEntry> suggested;
  if (needed.empty()) {
    notes.push_back(absl::StrCat(
        name, ": nothing allowed was seen, so the fragment leaves it as the floor has it"));
  } else if (surface == leash::v1::SURFACE_NETWORK) {
    SeenMap names;
    for (const auto& [key, seen] : needed) {
      if (std::string why = UnsuggestableNetworkEntry(key); !why.empty()) {
        notes.push_back(NotSuggested(name, key, seen.count, seen.example_ref, why));
        continue;
      }
      names.emplace(key, seen);
    }
    suggested = CollapseNetwork(names);
  } else if (surface == leash::v1::SURFACE_FILESYSTEM) {
    PathSuggestion paths = CollapsePaths(needed, [&](const std::string& folder) {
      return ResolveRootOnly(facts, folder).why;
    });
    suggested = std::move(paths.entries);
    for (const std::string& kept : paths.kept_apart) notes.push_back(kept);
    for (const SuggestedEntry& left : paths.left_out) {
      notes.push_back(
          NotSuggested(name, left.entry, left.count, left.example_ref, left.left_out_because));
    }
  } else if (surface == leash::v1::SURFACE_COMMANDS) {
    std::vector<std::string> programs(std::begin(kHostPrograms), std::end(kHostPrograms));
    for (const auto& [binary, seen] : needed) programs.push_back(binary);
    const ProgramCheck check(facts, observations.interpreters(), programs,
                             {std::begin(kSystemFolders), std::end(kSystemFolders)});
    for (SuggestedEntry& entry : ExactEntries(needed)) {
      // A binary's path is a path: escaped bytes or a glob name would name another file.
      std::string why = UnsuggestablePath(entry.entry, kShallowPathDepth);
      if (why.empty()) why = check.WhyNotSuggested(entry.entry);
      if (!why.empty()) {
        notes.push_back(NotSuggested(name, entry.entry, entry.count, entry.example_ref, why));
        continue;
      }
      suggested.push_back(std::move(entry));
    }
  } else {
    suggested = ExactEntries(needed);
  }
  if (surface == leash::v1::SURFACE_FILESYSTEM) {
    // A directory listed is allowed under the whitelist when an entry covers it or lies below
    // it (its names only); one that none does is said, never made an entry.
    for (const auto& [dir, seen] : observations.listed()) {
      const bool reached =
          std::any_of(suggested.begin(), suggested.end(),
                      [&, &dir = dir](const SuggestedEntry& entry) {
                        return entry.entry == dir ||
                               absl::StartsWith(entry.entry, absl::StrCat(dir, "/")) ||
                               absl::StartsWith(dir, absl::StrCat(entry.entry, "/"));
                      });
      if (reached) continue;
      notes.push_back(NotSuggested(
          name, dir, seen.count, seen.example_ref,
          "a directory it only listed; its entry would allow every file under it; allow it by "
          "hand if that is meant"));
    }
  }
  for (const auto& [what, seen] : observations.refused(surface)) {
    notes.push_back(absl::StrCat("refused, not suggested: ", name, " '", what, "' (",
                                 Times(seen.count), ", e.g. ref ", seen.example_ref,
                                 "): ", seen.reason));
  }
  return suggested;
}

// The entry grammar's judgement, as a profile save makes it: an entry that can never match is
// taken out and said, never written.
void DropInertEntries(std::map<Surface, std::vector<SuggestedEntry>>& suggested,
                      std::vector<std::string>& notes) {
  leash::v1::Config candidate;
  for (const auto& [surface, entries] : suggested) {
    leash::v1::EntryList* allow = AllowListOf(candidate, surface);
    for (const SuggestedEntry& entry : entries) allow->add_entries(entry.entry);
  }
  absl::flat_hash_set<std::string> inert;  // "<field>\n<entry>"
  for (const leash::v1::InertEntry& entry : engine::InertEntries(candidate)) {
    inert.insert(absl::StrCat(entry.field(), "\n", entry.entry()));
    notes.push_back(absl::StrCat("not suggested: ", entry.field(), " '", entry.entry(),
                                 "' can never match: ", entry.reason()));
  }
  for (auto& [surface, entries] : suggested) {
    const std::string name(engine::SurfaceName(surface));
    entries.erase(std::remove_if(entries.begin(), entries.end(),
                                 [&, &name = name](const SuggestedEntry& entry) {
                                   return inert.contains(
                                       absl::StrCat(name, ".allow\n", entry.entry));
                                 }),
                  entries.end());
  }
}

// The fragment's YAML, each entry annotated, and its Config; a surface with no entry is left
// out (a whitelist with nothing in it would refuse the surface everything).
absl::Status WriteFragment(const std::map<Surface, std::vector<SuggestedEntry>>& suggested,
                           const std::set<Surface>& audited_beneath, Fragment& fragment) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  for (const auto& [surface, entries] : suggested) {
    if (entries.empty()) continue;
    const std::string name(engine::SurfaceName(surface));
    leash::v1::EntryList* allow = AllowListOf(fragment.config, surface);
    out << YAML::Key << name << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "mode" << YAML::Value << "whitelist";
    out << YAML::Key << "allow" << YAML::Value << YAML::BeginSeq;
    for (const SuggestedEntry& entry : entries) {
      allow->add_entries(entry.entry);
      ++fragment.entries;
      out << YAML::DoubleQuoted << entry.entry << YAML::Comment(Annotation(entry));
    }
    out << YAML::EndSeq;
    if (audited_beneath.count(surface)) {
      SetAuditOff(fragment.config, surface);
      out << YAML::Key << "audit" << YAML::Value << false
          << YAML::Comment(CommentText(absl::StrCat(
                 "the floor audits ", name, ": without this the profile inherits it and blocks "
                 "nothing")));
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  if (!out.good()) {
    return absl::InternalError(absl::StrCat("the fragment could not be written as YAML: ",
                                            out.GetLastError()));
  }
  fragment.yaml = fragment.config.ByteSizeLong() == 0
                      ? "{}\n"
                      : absl::StrCat(absl::string_view(out.c_str(), out.size()), "\n");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Fragment> BuildFragment(const Observations& observations,
                                       const PathFacts& facts,
                                       const std::set<Surface>& surfaces,
                                       absl::string_view source,
                                       const std::set<Surface>& audited_beneath) {
  Fragment fragment;
  std::map<Surface, std::vector<SuggestedEntry>> suggested;
  for (Surface surface : kSurfaces) {
    if (!surfaces.empty() && !surfaces.count(surface)) continue;
    suggested[surface] = SuggestSurface(observations, facts, surface, fragment.notes);
  }
  DropInertEntries(suggested, fragment.notes);
  if (absl::Status written = WriteFragment(suggested, audited_beneath, fragment); !written.ok()) {
    return written;
  }
  for (Surface surface : audited_beneath) {
    const auto written = suggested.find(surface);
    if (written != suggested.end() && !written->second.empty()) continue;
    fragment.notes.push_back(absl::StrCat(
        engine::SurfaceName(surface), ": the floor audits it and this fragment leaves it as the "
        "floor has it, so under this profile it stays in audit and blocks nothing"));
  }

  absl::StatusOr<leash::v1::Config> read_back =
      engine::ParseConfigYaml(fragment.yaml, engine::ConfigKind::kProfile, "suggested fragment");
  if (!read_back.ok() ||
      !google::protobuf::util::MessageDifferencer::Equals(*read_back, fragment.config)) {
    return absl::InternalError(absl::StrCat(
        "the suggested fragment does not read back as written (a bug in leash suggest): ",
        read_back.ok() ? "it reads as a different policy" : read_back.status().message()));
  }
  for (const leash::v1::Finding& finding : engine::ValidateConfig(fragment.config, source)) {
    fragment.notes.push_back(absl::StrCat("validate ", engine::SeverityName(finding.severity()),
                                          ": ", finding.field(), " ", finding.entry(), ": ",
                                          finding.message()));
  }
  return fragment;
}

}  // namespace leash::cli
