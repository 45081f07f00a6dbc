// Named, file-backed lists: an entry "@system" in a network or filesystem allow/deny list stands
// for every entry of the list file /etc/leash/lists/system ("@/etc/leash/lists/system" names the
// same file by its path). The package ships `system`, `package-registries` and `github`; an
// operator adds more beside them. A list file holds one entry per line; '#' starts a comment
// line; blank lines are skipped; every entry is judged by the grammar of the field it is
// expanded into, and a list cannot name another list.
//
// Pure: the control plane reads the files (ListTexts) and hands their text in. A list that
// cannot be read, or holds an entry that can never match, fails the subjects that use it
// closed (ExpandLists returns an error naming the list and the line), like a dangling profile:
// a list silently losing its entries would either deny an agent everything it needs without
// saying why or, in a deny list, deny nothing.
//
// Commands and tools take no lists: a command list would be judged by names a subject can give
// its own copies, and a tool list has nothing to share. There "@..." can never match (the
// command and tool grammars say so), so it is refused on write and reported on load.
#pragma once

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "leash/v1/judgement.pb.h"
#include "leash/v1/policy.pb.h"

namespace leash::engine {

// Where every list lives: a reference names a file directly inside it.
inline constexpr char kListFolder[] = "/etc/leash/lists";

// Whether `entry` is a list reference (starts with '@'); it may still be malformed.
bool IsListReference(absl::string_view entry);

// The file a reference names: "@<name>" -> kListFolder/<name>; "@<kListFolder>/<name>" as is.
// A name is [a-z0-9][a-z0-9._-]*. Anything else is InvalidArgument saying why it can never
// name a list.
absl::StatusOr<std::string> ListFilePath(absl::string_view reference);

// One entry of a list file and the line it stands on (1-based).
struct ListLine {
  std::string entry;
  int line = 0;
};

// The entries of a list file's text; InvalidArgument naming the line for a line that names
// another list. Each entry's own grammar is the field's, judged by ExpandLists.
absl::StatusOr<std::vector<ListLine>> ParseListText(absl::string_view text);

// List file path -> its text, or the error reading it (an untrusted owner or mode included).
using ListTexts = absl::flat_hash_map<std::string, absl::StatusOr<std::string>>;

// The file of every well-formed list reference in `config`'s network and filesystem lists,
// in field order, without repeats.
std::vector<std::string> ListFilesUsed(const leash::v1::Config& config);

// `config` with every list reference in its network and filesystem lists replaced, in place,
// by the list's entries. An error (FailedPrecondition) names the field, the reference, the
// file and, for an entry, its line: the subject using it gets no policy.
absl::StatusOr<leash::v1::Config> ExpandLists(const leash::v1::Config& config,
                                              const ListTexts& texts);

// validate's account of the lists `config` uses (`source` as in ValidateConfig): for each, an
// info finding with its entry count and what an edit of it does, or a critical one when it
// cannot be read or holds an entry that can never match.
std::vector<leash::v1::Finding> ValidateLists(const leash::v1::Config& config,
                                              absl::string_view source, const ListTexts& texts);

}  // namespace leash::engine
