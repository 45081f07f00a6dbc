#include "engine/named_lists.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "engine/network_entry.h"
#include "engine/path_entry.h"

namespace leash::engine {
namespace {

// The fields a list may be used in.
struct ListField {
  const char* name;
  bool network;  // else filesystem
  bool deny;     // else allow
};
constexpr ListField kListFields[] = {
    {"network.allow", true, false},
    {"network.deny", true, true},
    {"filesystem.allow", false, false},
    {"filesystem.deny", false, true},
};

const leash::v1::EntryList& EntriesIn(const leash::v1::Config& c, const ListField& field) {
  if (field.network) return field.deny ? c.network().deny() : c.network().allow();
  return field.deny ? c.filesystem().deny() : c.filesystem().allow();
}

leash::v1::EntryList* MutableEntriesIn(leash::v1::Config& c, const ListField& field) {
  if (field.network) {
    return field.deny ? c.mutable_network()->mutable_deny() : c.mutable_network()->mutable_allow();
  }
  return field.deny ? c.mutable_filesystem()->mutable_deny()
                    : c.mutable_filesystem()->mutable_allow();
}

// The grammar of the field: why `entry` can never match there, or OK.
absl::Status EntryProblem(const ListField& field, absl::string_view entry) {
  return field.network ? ParseNetworkEntry(entry).status() : ParsePathEntry(entry).status();
}

bool IsListName(absl::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  if (!absl::ascii_islower(name[0]) && !absl::ascii_isdigit(name[0])) return false;
  for (char c : name) {
    if (!absl::ascii_islower(c) && !absl::ascii_isdigit(c) && c != '.' && c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

// The entries of the list `reference` names, each judged by `field`'s grammar; an error says
// which list, which file and which line.
absl::StatusOr<std::vector<ListLine>> EntriesOf(const ListField& field,
                                                absl::string_view reference,
                                                const std::string& file, const ListTexts& texts) {
  const std::string where = absl::StrCat(field.name, " entry '", reference, "': list ", file);
  auto it = texts.find(file);
  if (it == texts.end()) {
    return absl::FailedPreconditionError(absl::StrCat(where, " was not read"));
  }
  if (!it->second.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(where, " cannot be used: ", it->second.status().message(),
                     "; every subject using it is denied everything until it can be (fix it, "
                     "then reconcile)"));
  }
  absl::StatusOr<std::vector<ListLine>> lines = ParseListText(*it->second);
  if (!lines.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(where, " ", lines.status().message()));
  }
  for (const ListLine& line : *lines) {
    if (absl::Status problem = EntryProblem(field, line.entry); !problem.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          where, " line ", line.line, ": '", line.entry, "' can never match as a ", field.name,
          " entry (", problem.message(), "); every subject using the list is denied everything "
          "until the line is fixed"));
    }
  }
  return lines;
}

}  // namespace

bool IsListReference(absl::string_view entry) { return absl::StartsWith(entry, "@"); }

absl::StatusOr<std::string> ListFilePath(absl::string_view reference) {
  absl::string_view name = reference;
  if (!absl::ConsumePrefix(&name, "@")) {
    return absl::InvalidArgumentError("a list reference starts with '@' (e.g. @system)");
  }
  const std::string folder = absl::StrCat(kListFolder, "/");
  if (absl::StartsWith(name, "/") && !absl::ConsumePrefix(&name, folder)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a list file must lie directly in ", kListFolder, " (root's, like leash.yaml)"));
  }
  if (!IsListName(name)) {
    return absl::InvalidArgumentError(
        "a list is named by lowercase letters, digits, '.', '_' and '-' (e.g. @system), or by "
        "its file's path in " + std::string(kListFolder));
  }
  return absl::StrCat(folder, name);
}

absl::StatusOr<std::vector<ListLine>> ParseListText(absl::string_view text) {
  std::vector<ListLine> out;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    const absl::string_view entry = absl::StripAsciiWhitespace(line);
    if (entry.empty() || entry.front() == '#') continue;
    if (IsListReference(entry)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "line ", number, ": '", entry, "' names another list; a list holds entries only"));
    }
    out.push_back(ListLine{std::string(entry), number});
  }
  return out;
}

std::vector<std::string> ListFilesUsed(const leash::v1::Config& config) {
  std::vector<std::string> out;
  absl::flat_hash_set<std::string> seen;
  for (const ListField& field : kListFields) {
    for (const std::string& entry : EntriesIn(config, field).entries()) {
      if (!IsListReference(entry)) continue;
      absl::StatusOr<std::string> file = ListFilePath(entry);
      if (file.ok() && seen.insert(*file).second) out.push_back(*file);
    }
  }
  return out;
}

absl::StatusOr<leash::v1::Config> ExpandLists(const leash::v1::Config& config,
                                              const ListTexts& texts) {
  leash::v1::Config out = config;
  for (const ListField& field : kListFields) {
    const leash::v1::EntryList& before = EntriesIn(config, field);
    bool any = false;
    for (const std::string& entry : before.entries()) any = any || IsListReference(entry);
    if (!any) continue;
    leash::v1::EntryList* after = MutableEntriesIn(out, field);
    after->clear_entries();
    for (const std::string& entry : before.entries()) {
      absl::StatusOr<std::string> file =
          IsListReference(entry) ? ListFilePath(entry) : absl::StatusOr<std::string>();
      if (!IsListReference(entry) || !file.ok()) {
        // Not a list, or a reference that can never name one: kept, and reported inert.
        after->add_entries(entry);
        continue;
      }
      absl::StatusOr<std::vector<ListLine>> lines = EntriesOf(field, entry, *file, texts);
      if (!lines.ok()) return lines.status();
      for (ListLine& line : *lines) after->add_entries(std::move(line.entry));
    }
  }
  return out;
}

std::vector<leash::v1::Finding> ValidateLists(const leash::v1::Config& config,
                                              absl::string_view source, const ListTexts& texts) {
  std::vector<leash::v1::Finding> out;
  for (const ListField& field : kListFields) {
    for (const std::string& entry : EntriesIn(config, field).entries()) {
      if (!IsListReference(entry)) continue;
      absl::StatusOr<std::string> file = ListFilePath(entry);
      if (!file.ok()) continue;  // inert: ValidateConfig reports it
      leash::v1::Finding& finding = out.emplace_back();
      finding.set_source(std::string(source));
      finding.set_field(field.name);
      finding.set_entry(entry);
      absl::StatusOr<std::vector<ListLine>> lines = EntriesOf(field, entry, *file, texts);
      if (!lines.ok()) {
        finding.set_severity(leash::v1::SEVERITY_CRITICAL);
        finding.set_message(std::string(lines.status().message()));
        continue;
      }
      finding.set_severity(leash::v1::SEVERITY_INFO);
      finding.set_message(absl::StrCat(
          "list ", *file, ": ", lines->size(), " entries, expanded into ", field.name,
          ". The list is root's file, like this config: an edit that ",
          absl::EndsWith(field.name, ".deny") ? "removes" : "adds",
          " entries widens every subject using it at the next reconcile, with no consent asked (leashd logs "
          "each entry a list gains or loses)"));
    }
  }
  return out;
}

}  // namespace leash::engine
