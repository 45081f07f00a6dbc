// Reading the named lists a policy uses (engine/named_lists.h) for leashd and `leash validate`.
// The engine names a list by its canonical file (/etc/leash/lists/<name>); the files are read
// from the lists folder beside the config file (<dir of leash.yaml>/lists), which is that
// folder on an installed host.
//
// A list widens every subject that uses it, so it is trusted only as far as the config itself:
// the file and its folder must be owned by root and writable by nobody else, and the file is
// opened without following a symlink. A list that fails any of that is handed to the engine as
// an error, which denies its subjects everything and says why.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/named_lists.h"
#include "leash/v1/policy.pb.h"

namespace leash::host {

// <dir of config_path>/lists.
std::string ListFolderFor(const std::string& config_path);

// Reads every list `configs` use (engine::ListFilesUsed), from `folder`.
engine::ListTexts ReadListFiles(const std::vector<const leash::v1::Config*>& configs,
                                const std::string& folder);

// The entries of every list read whole, by canonical file: what a later pass compares with.
using ListEntries = std::map<std::string, std::vector<std::string>>;
ListEntries EntriesOfLists(const engine::ListTexts& texts);

// What changed in the lists between two passes, one line per list that gained or lost entries
// ("list /etc/leash/lists/system gained '/opt' ...: a loosening of every subject whose allow
// list uses it ..."). Lists absent from either side are not compared.
std::vector<std::string> DescribeListEdits(const ListEntries& before, const ListEntries& after);

}  // namespace leash::host
