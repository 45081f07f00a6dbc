#include "engine/inert_entries.h"

#include <functional>
#include <string>

#include "absl/strings/match.h"
#include "engine/named_lists.h"
#include "engine/network_entry.h"
#include "engine/path_entry.h"

namespace leash::engine {
namespace {

using Grammar = std::function<absl::Status(const std::string&)>;

void Walk(const leash::v1::EntryList& list, const char* field, const Grammar& grammar,
          std::vector<leash::v1::InertEntry>& out) {
  for (const std::string& entry : list.entries()) {
    absl::Status problem = grammar(entry);
    if (problem.ok()) continue;
    leash::v1::InertEntry& inert = out.emplace_back();
    inert.set_field(field);
    inert.set_entry(entry);
    inert.set_reason(std::string(problem.message()));
  }
}

}  // namespace

std::vector<leash::v1::InertEntry> InertEntries(const leash::v1::Config& config) {
  // A list reference stands for the list's entries: here only its own form is judged (the
  // entries are judged where the list is expanded, ExpandLists).
  const Grammar network = [](const std::string& e) {
    return IsListReference(e) ? ListFilePath(e).status() : ParseNetworkEntry(e).status();
  };
  const Grammar resolver = [](const std::string& e) { return ParseResolverEntry(e).status(); };
  const Grammar path = [](const std::string& e) {
    return IsListReference(e) ? ListFilePath(e).status() : ParsePathEntry(e).status();
  };
  const Grammar command = [](const std::string& e) { return ParseCommandEntry(e).status(); };
  const Grammar tool = [](const std::string& e) { return ParseToolEntry(e).status(); };

  std::vector<leash::v1::InertEntry> out;
  Walk(config.network().allow(), "network.allow", network, out);
  Walk(config.network().deny(), "network.deny", network, out);
  Walk(config.network().dns_resolvers(), "network.dns_resolvers", resolver, out);
  Walk(config.filesystem().allow(), "filesystem.allow", path, out);
  Walk(config.filesystem().deny(), "filesystem.deny", path, out);
  Walk(config.commands().allow(), "commands.allow", command, out);
  Walk(config.commands().deny(), "commands.deny", command, out);
  Walk(config.tools().allow(), "tools.allow", tool, out);
  Walk(config.tools().deny(), "tools.deny", tool, out);
  return out;
}

bool IsInertDeny(const leash::v1::InertEntry& entry) {
  return absl::EndsWith(entry.field(), ".deny");
}

}  // namespace leash::engine
