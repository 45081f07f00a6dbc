// A subject's policy, compiled for deciding: each surface's allow and deny lists indexed so a
// decision never scans a list. Built once per policy change, then shared read-only by every
// thread that decides (all methods are const and thread-safe).
//
// The rule on every surface: a matching deny entry blocks; otherwise blacklist mode allows,
// and whitelist mode allows only what an allow entry matches. Deny wins over allow.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "engine/cidr_table.h"
#include "engine/config_defaults.h"
#include "engine/decision.h"
#include "engine/domain_trie.h"
#include "engine/path_trie.h"
#include "leash/v1/judgement.pb.h"
#include "leash/v1/policy.pb.h"

namespace leash::engine {

// What a decision by a surface's lists rests on, before any text: the fanotify loop answers on
// `verdict` and renders the reason after the answer, straight into its record
// (AppendReason). Decide*() make the same ruling and render its reason at once.
struct Ruling {
  enum class Basis {
    kDenyEntry,   // a deny entry matched: block
    kNotDenied,   // blacklist mode, no deny entry matched: allow
    kAllowEntry,  // whitelist mode, an allow entry matched: allow
    kNotAllowed,  // whitelist mode, nothing matched: block
    // whitelist mode, a directory no entry matches but an allow entry lies below: it may be
    // listed (names only), so the way to what is allowed can be seen
    kAncestorOfAllowEntry,
    // whitelist mode, only a name allow entry matched, and the program is not one only root
    // could have made or changed: block
    kNameNotRootControlled,
  };
  Verdict verdict = Verdict::kBlock;
  Basis basis = Basis::kNotAllowed;
  MatchedOn matched_on = MatchedOn::kNone;
  // The entry that matched (kDenyEntry, kAllowEntry) as the policy wrote it. Points into the
  // CompiledPolicy, which must outlive the ruling.
  absl::string_view entry;
};

// Appends the reason Decide*() give for `ruling` on `subject`, e.g.
// "filesystem: /srv/a matches allow entry '/srv'".
void AppendReason(Surface surface, absl::string_view subject, const Ruling& ruling,
                  std::string& out);

// Two things the fanotify watcher allows or logs that are not a program run or a file read of
// their own, which `leash suggest` must not turn into an entry (cli/suggest_observations.cc):
// - a program's ELF interpreter, loaded by the kernel as part of that exec: its reason is
//   "commands: <interpreter>" + kElfInterpreterOf + "<program>, ...". As an entry it would let
//   the loader run any program it is handed (`ld.so /usr/bin/x` execs only ld.so);
// - a directory's open, a listing of its names: its reason ends with kDirectoryListing. As an
//   entry it would allow every file under it.
// Each is the writer's text right after the record's own path (or at the reason's end), so a
// file name cannot make another record read as one.
inline constexpr absl::string_view kElfInterpreterOf = " is the ELF interpreter of ";
inline constexpr absl::string_view kDirectoryListing = "; a directory, opened to list its names";

// Who could have made or changed the program an exec runs, as the watcher found it on disk.
// A name entry (`git`) stands for the system's program of that name, so it matches only a
// program the subject could not have placed or altered: owned by root, writable by nobody
// else, in a folder only root can write. An absolute entry matches as written.
enum class ProgramOrigin {
  kRootControlled,
  // Anything else (another owner, group or other write, a folder others can write, a
  // filesystem whose owners its server makes up, or facts that could not be read).
  kOther,
};

// Owned by root and writable by nobody else (no group or other write bit): the file and the
// folder conditions of kRootControlled.
inline bool RootOnlyWritable(uint32_t uid, uint32_t mode) {
  return uid == 0 && (mode & 022) == 0;
}

// A name on the system PATH that is a link (`python3` -> `/usr/bin/python3.11`), resolved by
// leashd on every reconcile: a name entry also matches the link's target. leashd sends only
// links whose every hop and whose target are root-controlled (ProgramOrigin).
struct CommandLink {
  std::string name;
  std::string target;  // absolute, normal
};

class CompiledPolicy {
 public:
  // Compiles `config`; fields it leaves out take their defaults (WithDefaults). An entry that
  // can never match is left out of the index and listed in skipped_entries(): in an allow list
  // it already fails closed on its own; in a deny list it blocks nothing, which validate
  // reports as critical.
  // `links` extend the commands surface's name entries to the links' targets.
  // `audit_above`: the policy written above the tier that set each audited surface's audit
  // (SubjectPolicy.audit_above; a surface it leaves out has none), compiled beside this one.
  static CompiledPolicy Compile(const leash::v1::Config& config,
                                const std::vector<CommandLink>& links = {},
                                const leash::v1::Config* audit_above = nullptr);

  Decision DecideNetwork(const NetworkSubject& subject) const;
  // Whether a DNS question for `name` may be answered: whether some connection to that name
  // could be allowed. A deny entry that names the domain on every port blocks (one that names a
  // port leaves the others open); whitelist then allows a name an allow entry matches on some
  // port, blacklist every name not denied. An invalid host name is blocked. The reason reads
  // "network: DNS name <name> ...".
  Decision DecideDnsName(absl::string_view name) const;
  // `path` should be absolute; it is normalized lexically ('.', '..', '//'). A relative path
  // cannot be judged and gets FailDecision.
  Decision DecidePath(absl::string_view path) const;
  // DecidePath's ruling without its reason, for a path that is already normal
  // (IsNormalAbsolutePath: the kernel's paths are); anything else must go through DecidePath.
  Ruling RuleOnNormalPath(absl::string_view path) const;
  // The ruling on opening (listing) the directory `path`, already normal: a deny entry blocks
  // it as it blocks a file; under a whitelist a directory is allowed when an allow entry
  // matches it or lies below it (its ancestors are listed by name only: every file in them is
  // still judged on its own).
  Ruling RuleOnNormalDirectory(absl::string_view path) const;
  // RuleOnNormalDirectory for any absolute path (normalized first), with its reason.
  Decision DecideDirectory(absl::string_view path) const;
  // `binary`: an absolute path (matched by path and by basename) or a bare name (by name).
  // A deny matches by path, by name and by a link's target whatever `origin` is (a deny never
  // weakens: a copy keeps being caught by its name); an allow matches by path as written, and
  // by name or a link's target only when `origin` is kRootControlled.
  Decision DecideCommand(absl::string_view binary,
                         ProgramOrigin origin = ProgramOrigin::kRootControlled) const;
  Decision DecideTool(absl::string_view name) const;

  FailMode fail_mode() const { return fail_mode_; }
  // Whether `surface` is in audit (its `audit: true`): its blocks are logged and not made,
  // except those the policy written above the tier that set audit makes too (UnderAudit).
  bool audited(Surface surface) const;
  // Rule L4: the policy written above the tier that set `surface`'s audit (the floor under a
  // global binding's audit; the floor and the global binding folded under an agent profile's).
  // nullptr when the surface is not audited or the floor set its audit: nothing is above it.
  const CompiledPolicy* audit_above(Surface surface) const;
  // Audit as the enforcers apply it (rule L4): `decision`, this policy's on one event of
  // `surface`, unchanged unless it is a block on an audited surface. Then it is not enforced,
  // unless the surface has an audit_above and `above_blocks` (asked with it) says that policy,
  // judging the same event the same way, blocks it too: then it stays enforced, marked
  // kept_under_audit. Audit covers what its own tier decides, never a deny written above it.
  Decision UnderAudit(Surface surface, Decision decision,
                      absl::FunctionRef<bool(const CompiledPolicy& above)> above_blocks) const;
  // The policy as compiled, every field present.
  const leash::v1::Config& config() const { return config_; }
  const std::vector<leash::v1::InertEntry>& skipped_entries() const { return skipped_; }

 private:
  struct NetworkList {
    DomainTrie domains;
    CidrTable networks;
    std::vector<std::string> entries;
  };
  struct PathList {
    PathTrie trie;
    std::vector<std::string> entries;
  };
  struct NameList {
    absl::flat_hash_map<std::string, int> names;
    absl::flat_hash_map<std::string, int> paths;
    // A link's target -> the name entry the link is named after (commands only).
    absl::flat_hash_map<std::string, int> link_targets;
    std::vector<std::string> entries;
  };
  template <typename List>
  struct Rules {
    leash::v1::Mode mode = leash::v1::MODE_WHITELIST;
    List allow;
    List deny;
  };

  CompiledPolicy() = default;

  leash::v1::Config config_;
  FailMode fail_mode_ = FailMode::kClosed;
  Rules<NetworkList> network_;
  Rules<PathList> filesystem_;
  Rules<NameList> commands_;
  Rules<NameList> tools_;
  std::vector<leash::v1::InertEntry> skipped_;
  // Rule L4: the compiled audit_above, and which surfaces (by Surface number) it is for.
  std::shared_ptr<const CompiledPolicy> above_;
  bool above_for_[5] = {false, false, false, false, false};
};

}  // namespace leash::engine
