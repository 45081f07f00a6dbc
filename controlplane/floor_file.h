// /etc/leash/leash.yaml, the floor: loading it, editing it (`leash <surface> allow|deny|mode`),
// and writing it as docs/ARCHITECTURE.md rule P11 requires — 0640, owned root:<leashed user>,
// re-stated on every write: the leashed user reads the policy through the group, never through
// ownership, because owning the file would let the confined account rewrite its own leash.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "leash/v1/decision.pb.h"
#include "leash/v1/judgement.pb.h"
#include "leash/v1/policy.pb.h"

namespace leash::controlplane {

// Reads and parses the floor. NotFound names the file and `leash init`; a parse error names
// the line and column.
absl::StatusOr<leash::v1::Config> LoadFloor(const std::string& path);

// The floor's text as read, and what it parses to.
struct FloorText {
  std::string text;
  leash::v1::Config config;
};
absl::StatusOr<FloorText> LoadFloorText(const std::string& path);

// The edits below made in the floor's text, so that the operator's comments and layout stay
// (engine::AppendToYamlList / SetYamlScalar). FailedPrecondition when the text does not have the
// shape the edit needs.
absl::StatusOr<std::string> PatchFloorEntry(absl::string_view text, leash::v1::Surface surface,
                                            bool allow, absl::string_view entry);
absl::StatusOr<std::string> PatchFloorRemoveEntry(absl::string_view text,
                                                  leash::v1::Surface surface, bool allow,
                                                  absl::string_view entry);
absl::StatusOr<std::string> PatchFloorMode(absl::string_view text, leash::v1::Surface surface,
                                           leash::v1::Mode mode);

// How an edited floor reached the disk.
struct FloorWrite {
  // The operator's text with only the edit changed in it.
  bool text_kept = false;
  // When it was not: what was done instead and where the previous text is.
  std::string notice;
};

// Writes the floor after an edit: `patched` (the edit made in `original`, the text as read)
// when it reads back to exactly `edited`; otherwise `original` is first saved as
// <path>.before-edit (0640 `owner`:`gid`) and `edited` written whole, and the notice says so.
absl::StatusOr<FloorWrite> WriteEditedFloor(const std::string& path, const std::string& original,
                                            const absl::StatusOr<std::string>& patched,
                                            const leash::v1::Config& edited, uid_t owner,
                                            gid_t gid);

// Writes `config` atomically as `path`, mode 0640, owner `owner` (root, kFloorOwner, in leashd;
// a test run without root names itself), group `gid`.
absl::Status WriteFloor(const std::string& path, const leash::v1::Config& config, uid_t owner,
                        gid_t gid);

// Re-states the mode and owner of an existing floor (install/upgrade repair).
absl::Status RestateFloorPermissions(const std::string& path, uid_t owner, gid_t gid);

// The floor's owner: root. Only root may rewrite it; the leashed user reads it by its group.
inline constexpr uid_t kFloorOwner = 0;

// Adds `entry` to `surface`'s allow (allow=true) or deny list of `config`. An entry that can
// never match is refused: InvalidArgument with `inert` filled (field, entry, reason). An entry
// already present leaves the config unchanged and returns false.
absl::StatusOr<bool> AddFloorEntry(leash::v1::Config& config, leash::v1::Surface surface,
                                   bool allow, absl::string_view entry,
                                   leash::v1::InertEntry* inert);

// Removes every copy of `entry` from `surface`'s allow (allow=true) or deny list of `config`;
// returns false when the list does not hold it. InvalidArgument for an unknown surface.
absl::StatusOr<bool> RemoveFloorEntry(leash::v1::Config& config, leash::v1::Surface surface,
                                      bool allow, absl::string_view entry);

// The entries of `surface`'s allow (allow=true) or deny list of `config` (empty for an unknown
// surface).
std::vector<std::string> FloorEntries(const leash::v1::Config& config, leash::v1::Surface surface,
                                      bool allow);

// Sets `surface`'s mode; returns false when it already had it.
bool SetFloorMode(leash::v1::Config& config, leash::v1::Surface surface, leash::v1::Mode mode);

}  // namespace leash::controlplane
