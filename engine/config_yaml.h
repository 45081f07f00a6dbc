// leash.yaml and profile fragments <-> the Config model. The one place yaml-cpp is used: its
// exceptions are caught here and returned as Status with the line and column.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "leash/v1/judgement.pb.h"
#include "leash/v1/policy.pb.h"

namespace leash::engine {

// The largest policy text (the floor, a profile) Leash reads: 1 MiB. A real policy is a few
// KiB; parsing is far slower and hungrier than the text is long, so a file over the cap is
// refused before it is parsed, by leashd and by the CLI alike (docs/OPERATIONS.md).
inline constexpr size_t kMaxPolicyYamlBytes = size_t{1} << 20;

// The refusal of a policy text of `size` bytes over kMaxPolicyYamlBytes, naming `source`, the
// size and the cap (FailedPrecondition); OK at or under the cap.
absl::Status CheckPolicyYamlSize(size_t size, absl::string_view source);

// CheckPolicyYamlSize, then: text that is not UTF-8 is refused (InvalidArgument) naming
// `source` and the first line that is not. What ParseConfigYaml checks before parsing, and the
// CLI before it sends a file's text to leashd.
absl::Status CheckPolicyYamlText(absl::string_view yaml, absl::string_view source);

enum class ConfigKind {
  // /etc/leash/leash.yaml: any key.
  kFloor,
  // A profile: a fragment that sets only the keys it means to. It may not set `user` (the
  // floor's identity) or `logging` (one host-wide decision log).
  kProfile,
};

// Parses YAML text into a Config carrying exactly the keys the text writes. Unknown keys, wrong
// types, duplicate keys and bad values (a mode that is not whitelist|blacklist, ...) are
// InvalidArgument naming `source`, the line and column, and the key path, e.g.
//   "leash.yaml:3:9: network.mode: 'whitlist' is not a mode (whitelist|blacklist)".
// Entries are not judged here: an entry that can never match loads, and is reported by
// InertEntries (accepted on load, refused on write). Text over kMaxPolicyYamlBytes is refused
// unparsed (CheckPolicyYamlSize), and text that is not UTF-8 is refused naming the first line
// that is not (every string of the Config crosses protobuf, which carries UTF-8 only).
absl::StatusOr<leash::v1::Config> ParseConfigYaml(absl::string_view yaml, ConfigKind kind,
                                                  absl::string_view source);

// Gives each finding of `findings` about `source` (e.g. "floor", "profile:web") whose field is a
// key path written in `yaml` (fail_mode, network.allow, ...) the place it is written, as parse
// errors have it: its message is prefixed "<file>:<line>:<column>: ". Text that does not parse
// leaves the findings as they are.
void LocateFindings(absl::string_view yaml, absl::string_view file, absl::string_view source,
                    std::vector<leash::v1::Finding>& findings);

// Writes the keys `config` carries as YAML that ParseConfigYaml reads back to the same Config.
std::string EmitConfigYaml(const leash::v1::Config& config);

// Edits of a floor's text that leave everything else as its author wrote it: comments, key
// order, quoting, layout. `section` is a top-level key (network, filesystem, commands, tools).
// FailedPrecondition, saying why, when the text does not have the shape the edit needs (the
// key absent, a list item spanning lines, ...): the caller then writes the whole Config. The
// result is not judged here: the caller reads it back and compares.
//
// Appends `item` (written double-quoted) to the list `section`.`key`, flow ([a, b]) or block
// ("- a" lines).
absl::StatusOr<std::string> AppendToYamlList(absl::string_view yaml, absl::string_view section,
                                             absl::string_view key, absl::string_view item);
// Removes every item equal to `item` from the list `section`.`key`, with its separating comma
// (flow) or its line (block); an item alone on its line takes its comment along, every other
// comment stays. A block list left empty becomes []. FailedPrecondition also when no item is
// equal to `item`.
absl::StatusOr<std::string> RemoveFromYamlList(absl::string_view yaml, absl::string_view section,
                                               absl::string_view key, absl::string_view item);
// Replaces the scalar `section`.`key` with `value` (written as it is: a plain word).
absl::StatusOr<std::string> SetYamlScalar(absl::string_view yaml, absl::string_view section,
                                          absl::string_view key, absl::string_view value);

absl::string_view ModeName(leash::v1::Mode mode);
absl::string_view UdpModeName(leash::v1::UdpMode udp);
// "drop" or "allow" (an unspecified mode reads as drop, the default).
absl::string_view InboundModeName(leash::v1::InboundMode inbound);
// "filter" / "resolvers".
absl::string_view DnsModeName(leash::v1::DnsMode dns);
absl::string_view InspectActionName(leash::v1::InspectAction action);
absl::StatusOr<leash::v1::Mode> ParseModeName(absl::string_view name);

}  // namespace leash::engine
