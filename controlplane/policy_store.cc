#include "controlplane/policy_store.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "base/atomic_file.h"
#include "base/read_file.h"
#include "controlplane/bindings_lock.h"
#include "engine/bindings_yaml.h"
#include "engine/complete_judgement.h"
#include "engine/config_yaml.h"
#include "engine/consent.h"
#include "engine/inert_entries.h"
#include "engine/refusal.h"
#include "engine/removal_consent.h"
#include "engine/scope.h"
#include "base/status_macros.h"

namespace leash::controlplane {
namespace {

using engine::Bindings;
using leash::v1::Refusal;

constexpr char kBindingsName[] = "bindings.yaml";
constexpr char kProfilesDir[] = "profiles";
constexpr absl::string_view kProfileSuffix = ".yaml";
// atomic_file's temp files: "<target>.tmp-XXXXXX".
constexpr absl::string_view kTempMarker = ".tmp-";
constexpr mode_t kFileMode = 0640;
constexpr mode_t kDirMode = 0750;

WriteOutcome Refused(Refusal refusal) {
  WriteOutcome outcome;
  outcome.refusal = std::move(refusal);
  return outcome;
}

absl::Status MakeDir(const std::string& path) {
  if (mkdir(path.c_str(), kDirMode) == 0 || errno == EEXIST) return absl::OkStatus();
  return absl::ErrnoToStatus(errno, absl::StrCat("mkdir ", path));
}

bool DirExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Names in `dir` (no "." / ".."); NotFound when the folder does not exist.
absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) {
  DIR* handle = opendir(dir.c_str());
  if (handle == nullptr) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat(dir, " does not exist"));
    return absl::ErrnoToStatus(errno, absl::StrCat("opendir ", dir));
  }
  std::vector<std::string> names;
  errno = 0;
  while (dirent* entry = readdir(handle)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  const int error = errno;
  closedir(handle);
  if (error != 0) return absl::ErrnoToStatus(error, absl::StrCat("readdir ", dir));
  std::sort(names.begin(), names.end());
  return names;
}

std::string ConfiguredUser(const HostInputs& host) {
  return host.floor.ok() ? host.floor->user() : "";
}

Refusal FloorUnreadable(absl::string_view what, const absl::Status& status) {
  return engine::MakeRefusal(engine::kRefusalUnjudgeable,
                             absl::StrCat(what, " cannot be judged because the floor cannot be "
                                                "read (",
                                          status.message(), "); fix the floor and run again"));
}

std::vector<std::string> BoundTo(const Bindings& bindings, absl::string_view profile) {
  std::vector<std::string> scopes;
  for (const engine::Binding* binding : bindings.NamingProfile(profile)) {
    scopes.push_back(binding->scope);
  }
  return scopes;
}

}  // namespace

std::vector<leash::v1::Finding> JudgePolicy(const HostInputs& host, const leash::v1::Config& floor,
                                            const engine::Bindings& bindings,
                                            const engine::ProfileLibrary& profiles) {
  if (!host.read_lists) {
    return engine::ValidatePolicy(floor, bindings, profiles, host.agent_accounts, nullptr);
  }
  std::vector<const leash::v1::Config*> configs = {&floor};
  for (const auto& [name, profile] : profiles) {
    if (profile.ok()) configs.push_back(&*profile);
  }
  const engine::ListTexts lists = host.read_lists(configs);
  return engine::ValidatePolicy(floor, bindings, profiles, host.agent_accounts, &lists);
}

namespace {

// validate's judgement of the policy over host.floor (which must load), as every write is
// judged by before and after (engine::JudgeBindCompletely and its kin).
engine::PolicyJudge PolicyJudgeFor(const HostInputs& host) {
  return [&host](const Bindings& bindings, const engine::ProfileLibrary& profiles) {
    return JudgePolicy(host, *host.floor, bindings, profiles);
  };
}

}  // namespace

leash::v1::PolicyWriteResponse WriteOutcome::ToResponse() const {
  leash::v1::PolicyWriteResponse response;
  response.set_written(written);
  if (refusal) *response.mutable_refusal() = *refusal;
  for (const std::string& notice : notices) response.add_notices(notice);
  return response;
}

// --- ProfileStore ---------------------------------------------------------------------------

ProfileStore::ProfileStore(std::string state_dir)
    : dir_(absl::StrCat(state_dir, "/", kProfilesDir)) {}

absl::Status ProfileStore::ValidateName(absl::string_view name) {
  const auto refuse = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("profile name '", name, "' ", why,
                                                   "; use letters, digits, '.', '_' and '-' "
                                                   "(e.g. web-research)"));
  };
  if (name.empty()) return refuse("is empty");
  if (name.size() > 64) return refuse("is longer than 64 characters");
  if (name.front() == '.') return refuse("starts with '.' (a dot-file)");
  if (name.front() == '-') return refuse("starts with '-'");
  if (absl::StrContains(name, "..")) return refuse("contains '..'");
  for (char c : name) {
    if (c == '/') return refuse("contains a path separator");
    if (!(absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-')) {
      return refuse(absl::StrCat("contains '", absl::CHexEscape(std::string(1, c)), "'"));
    }
  }
  return absl::OkStatus();
}

std::string ProfileStore::PathFor(absl::string_view name) const {
  return absl::StrCat(dir_, "/", name, kProfileSuffix);
}

absl::StatusOr<ProfileStore::Loaded> ProfileStore::Load(absl::string_view name) const {
  RETURN_IF_ERROR(ValidateName(name));
  const std::string path = PathFor(name);
  absl::StatusOr<std::string> yaml = base::ReadFile(path);
  if (absl::IsNotFound(yaml.status())) {
    return absl::NotFoundError(absl::StrCat("no profile named '", name, "' (", path,
                                            " does not exist); leash profile list shows them"));
  }
  if (!yaml.ok()) return yaml.status();
  return memo_->Get(path, *yaml, [&]() -> absl::StatusOr<Loaded> {
    Loaded loaded{std::string(name), *yaml,
                  engine::ParseConfigYaml(*yaml, engine::ConfigKind::kProfile, path),
                  {}};
    if (loaded.fragment.ok()) loaded.inert = engine::InertEntries(*loaded.fragment);
    return loaded;
  });
}

absl::StatusOr<std::vector<std::string>> ProfileStore::List() const {
  absl::StatusOr<std::vector<std::string>> files = ListDir(dir_);
  if (absl::IsNotFound(files.status())) return std::vector<std::string>();
  if (!files.ok()) return files.status();
  std::vector<std::string> names;
  for (absl::string_view file : *files) {
    if (!absl::ConsumeSuffix(&file, kProfileSuffix)) continue;
    if (ValidateName(file).ok()) names.emplace_back(file);
  }
  return names;
}

absl::StatusOr<engine::ProfileLibrary> ProfileStore::LoadLibrary() const {
  ASSIGN_OR_RETURN(std::vector<std::string> names, List());
  engine::ProfileLibrary library;
  for (const std::string& name : names) {
    absl::StatusOr<Loaded> loaded = Load(name);
    // Removed between the listing and the read: it is deleted, so it is absent.
    if (absl::IsNotFound(loaded.status())) continue;
    if (!loaded.ok()) return loaded.status();
    library.emplace(name, std::move(loaded->fragment));
  }
  return library;
}

std::optional<leash::v1::Config> ProfileStore::CheckForWrite(absl::string_view name,
                                                             absl::string_view yaml,
                                                             Refusal& refusal) const {
  if (absl::Status valid = ValidateName(name); !valid.ok()) {
    refusal = engine::MakeRefusal(engine::kRefusalProfile, std::string(valid.message()));
    return std::nullopt;
  }
  absl::StatusOr<leash::v1::Config> fragment =
      engine::ParseConfigYaml(yaml, engine::ConfigKind::kProfile, absl::StrCat(name, ".yaml"));
  if (!fragment.ok()) {
    refusal = engine::MakeRefusal(engine::kRefusalProfile,
                                  absl::StrCat("profile '", name, "' does not load: ",
                                               fragment.status().message()));
    return std::nullopt;
  }
  if (std::optional<Refusal> inert =
          engine::RefuseInertEntries(absl::StrCat("profile '", name, "'"), *fragment)) {
    refusal = *std::move(inert);
    return std::nullopt;
  }
  return *std::move(fragment);
}

// --- BindingStore ---------------------------------------------------------------------------

BindingStore::BindingStore(Options options)
    : options_(std::move(options)),
      profiles_(options_.state_dir),
      ledger_(absl::StrCat(options_.state_dir, "/", kUnbindLedgerName)) {}

std::string BindingStore::bindings_path() const {
  return absl::StrCat(options_.state_dir, "/", kBindingsName);
}

absl::Status BindingStore::EnsureFolders() const {
  RETURN_IF_ERROR(MakeDir(options_.state_dir));
  return MakeDir(profiles_.dir());
}

struct BindingStore::Locked {
  base::FileLock lock;
  // bindings.yaml's text as read (nullopt: absent), to put back if a later write fails.
  std::optional<std::string> text;
  Bindings bindings;
  engine::ProfileLibrary library;
};

absl::StatusOr<BindingStore::Locked> BindingStore::LockForWrite() const {
  ASSIGN_OR_RETURN(base::FileLock lock,
                   AcquireBindingsLock(options_.state_dir, base::FileLock::Mode::kExclusive));
  SweepTempFiles();
  Locked locked{std::move(lock), std::nullopt, Bindings(), {}};
  RETURN_IF_ERROR(ReadBindingsLocked(locked.text, locked.bindings));
  ASSIGN_OR_RETURN(locked.library, profiles_.LoadLibrary());
  return locked;
}

absl::Status BindingStore::ReadBindingsLocked(std::optional<std::string>& text,
                                              Bindings& bindings) const {
  absl::StatusOr<std::string> content = base::ReadFile(bindings_path());
  if (absl::IsNotFound(content.status())) {
    text.reset();
    bindings = Bindings();
    return absl::OkStatus();
  }
  if (!content.ok()) return content.status();
  absl::StatusOr<Bindings> parsed = bindings_memo_->Get(bindings_path(), *content, [&] {
    return engine::ParseBindingsYaml(*content, bindings_path());
  });
  if (!parsed.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        parsed.status().message(),
        " — bindings.yaml does not parse, so no policy write is judged against it until it is "
        "repaired"));
  }
  text = *std::move(content);
  bindings = *std::move(parsed);
  return absl::OkStatus();
}

absl::Status BindingStore::RestoreBindings(const std::optional<std::string>& text) const {
  if (text) return base::WriteFileAtomically(bindings_path(), *text, kFileMode);
  absl::Status removed = base::RemoveFileDurably(bindings_path());
  return absl::IsNotFound(removed) ? absl::OkStatus() : removed;
}

void BindingStore::SweepTempFiles() const {
  for (const std::string& dir : {options_.state_dir, profiles_.dir()}) {
    absl::StatusOr<std::vector<std::string>> names = ListDir(dir);
    if (!names.ok()) continue;
    for (const std::string& name : *names) {
      // Under the exclusive lock no writer is mid-write: any temp file is a killed writer's.
      if (absl::StrContains(name, kTempMarker)) unlink(absl::StrCat(dir, "/", name).c_str());
    }
  }
}

std::optional<Refusal> BindingStore::RecordConsent(absl::string_view kind, absl::string_view who,
                                                   absl::string_view scope,
                                                   absl::string_view profile,
                                                   const std::vector<std::string>& acks,
                                                   absl::string_view unchanged,
                                                   std::vector<std::string>& notices) const {
  if (acks.empty()) return std::nullopt;
  UnbindRecord record{options_.now(),
                      who.empty() ? std::string("unknown (the caller was not given)")
                                  : std::string(who),
                      std::string(scope), std::string(profile), acks, std::string(kind)};
  absl::StatusOr<UnbindLedger::Appended> appended = ledger_.Append(record);
  if (!appended.ok()) {
    return engine::MakeRefusal(
        engine::kRefusalLedger,
        absl::StrCat("the consent ledger record could not be written to ", ledger_.path(), " (",
                     appended.status().message(), "), so nothing was written: ", unchanged,
                     "; fix the ledger (leash validate reports it) and run the command again"));
  }
  if (!appended->torn_notice.empty()) notices.push_back(appended->torn_notice);
  notices.push_back(absl::StrCat("consent recorded in ", ledger_.path(), ": ",
                                 absl::StrJoin(acks, ", ")));
  return std::nullopt;
}

absl::StatusOr<WriteOutcome> BindingStore::SaveProfile(const SaveProfileArgs& args,
                                                       const HostInputs& host) {
  Refusal refusal;
  std::optional<leash::v1::Config> fragment =
      profiles_.CheckForWrite(args.name, args.yaml, refusal);
  if (!fragment) return Refused(std::move(refusal));
  if (!host.floor.ok()) {
    return Refused(FloorUnreadable(absl::StrCat("saving profile '", args.name, "'"),
                                   host.floor.status()));
  }

  RETURN_IF_ERROR(EnsureFolders());
  // "the bindings are re-read and the edit judged against them as they are then".
  ASSIGN_OR_RETURN(Locked locked, LockForWrite());
  const engine::Resolver resolver(*host.floor, locked.bindings, locked.library);
  engine::ProfileEditJudgement judgement = engine::JudgeProfileEditCompletely(
      resolver, args.name, *fragment, args.acks, args.from_path, host.agent_accounts,
      PolicyJudgeFor(host));
  WriteOutcome outcome;
  outcome.notices = std::move(judgement.notices);
  if (judgement.refusal) {
    outcome.refusal = std::move(judgement.refusal);
    return outcome;
  }
  // The consent for the change itself first: a save whose record cannot be written does not
  // happen.
  if (std::optional<Refusal> unrecorded = RecordConsent(
          kLedgerProfileSave, args.who, absl::StrCat("profile:", args.name), args.name,
          judgement.change_acks, absl::StrCat("profile '", args.name, "' was not saved"),
          outcome.notices)) {
    return Refused(*std::move(unrecorded));
  }

  // Bindings first: a crash between the two renames leaves consent to a loosening nothing
  // performs yet (inert, reported stale by validate), never a loosened profile beside agents
  // that have not consented.
  const bool bindings_changed = !judgement.gained.empty();
  if (bindings_changed) {
    RETURN_IF_ERROR(base::WriteFileAtomically(bindings_path(),
                                        engine::EmitBindingsYaml(judgement.bindings), kFileMode));
  }
  absl::Status written = base::WriteFileAtomically(profiles_.PathFor(args.name), args.yaml, kFileMode);
  if (!written.ok()) {
    if (bindings_changed) {
      // "a failed profile write puts the bindings back before the lock is released".
      absl::Status restored = RestoreBindings(locked.text);
      if (!restored.ok()) {
        return absl::Status(
            written.code(),
            absl::StrCat("profile '", args.name, "' was not written (", written.message(),
                         ") and putting bindings.yaml back failed too (", restored.message(),
                         "): the bindings hold consent to a loosening nothing performs; "
                         "leash validate reports it as stale"));
      }
    }
    return written;
  }
  outcome.written = true;
  for (const std::string& scope : judgement.gained) {
    outcome.notices.push_back(
        absl::StrCat("consent recorded on ", scope, "'s binding"));
  }
  return outcome;
}

std::optional<Refusal> BindingStore::RecordFloorConsent(absl::string_view who,
                                                       absl::string_view what,
                                                       const std::vector<std::string>& acks,
                                                       std::vector<std::string>& notices) const {
  if (acks.empty()) return std::nullopt;
  if (absl::Status made = EnsureFolders(); !made.ok()) {
    return engine::MakeRefusal(
        engine::kRefusalLedger,
        absl::StrCat("the consent ledger's folder could not be made (", made.message(),
                     "), so the floor was not changed by ", what));
  }
  return RecordConsent(kLedgerFloorEdit, who, "floor", "", acks,
                       absl::StrCat("the floor was not changed by ", what), notices);
}

absl::StatusOr<WriteOutcome> BindingStore::DeleteProfile(absl::string_view name,
                                                         const std::vector<std::string>& acks,
                                                         const HostInputs& host,
                                                         absl::string_view who) {
  if (absl::Status valid = ProfileStore::ValidateName(name); !valid.ok()) {
    return Refused(engine::MakeRefusal(engine::kRefusalProfile, std::string(valid.message())));
  }
  if (!DirExists(options_.state_dir)) {
    return Refused(engine::MakeRefusal(engine::kRefusalProfile,
                                       absl::StrCat("no profile named '", name, "'")));
  }
  ASSIGN_OR_RETURN(Locked locked, LockForWrite());
  if (locked.library.find(std::string(name)) == locked.library.end()) {
    return Refused(engine::MakeRefusal(
        engine::kRefusalProfile,
        absl::StrCat("no profile named '", name, "' (leash profile list shows them)")));
  }
  // Judged against the bindings as they are under the writer lock: a bind racing the delete
  // is either seen here or refused by its own re-check.
  engine::ProfileDeleteJudgement judgement =
      engine::JudgeProfileDelete(locked.bindings, name, acks);
  if (judgement.refusal) return Refused(*std::move(judgement.refusal));
  WriteOutcome outcome;
  // The consent to strand its bindings is on the ledger before the profile goes.
  if (std::optional<Refusal> unrecorded = RecordConsent(
          kLedgerProfileDelete, who, absl::StrCat("profile:", name), name, judgement.consent,
          absl::StrCat("profile '", name, "' is kept"), outcome.notices)) {
    return Refused(*std::move(unrecorded));
  }
  absl::Status removed = base::RemoveFileDurably(profiles_.PathFor(name));
  if (absl::IsNotFound(removed)) {
    return Refused(engine::MakeRefusal(
        engine::kRefusalProfile,
        absl::StrCat("no profile named '", name, "' (leash profile list shows them)")));
  }
  RETURN_IF_ERROR(removed);
  outcome.written = true;
  for (std::string& notice : judgement.notices) outcome.notices.push_back(std::move(notice));
  return outcome;
}

absl::StatusOr<WriteOutcome> BindingStore::Bind(absl::string_view scope_text,
                                                absl::string_view profile,
                                                const std::vector<std::string>& acks,
                                                const HostInputs& host, absl::string_view who) {
  const std::vector<std::string> words = {"sudo", "leash", "bind", std::string(scope_text),
                                          std::string(profile)};
  const engine::ScopeCheck check =
      engine::CheckScopeForWrite(scope_text, host.agent_accounts, ConfiguredUser(host));
  if (!check.status.ok()) return Refused(engine::RefuseScope(check, words, 3, acks));
  if (!host.floor.ok()) {
    return Refused(FloorUnreadable(absl::StrCat("binding '", profile, "' to ", scope_text),
                                   host.floor.status()));
  }
  if (absl::Status valid = ProfileStore::ValidateName(profile); !valid.ok()) {
    return Refused(engine::MakeRefusal(engine::kRefusalProfile, std::string(valid.message())));
  }

  // Judge as the operator's command would be judged, outside the writer lock...
  absl::StatusOr<ProfileStore::Loaded> judged = profiles_.Load(profile);
  if (absl::IsNotFound(judged.status())) {
    return Refused(engine::MakeRefusal(engine::kRefusalProfile,
                                       std::string(judged.status().message())));
  }
  if (!judged.ok()) return judged.status();
  if (!judged->fragment.ok()) {
    return Refused(engine::MakeRefusal(
        engine::kRefusalProfile, absl::StrCat("profile '", profile, "' does not load (",
                                              judged->fragment.status().message(),
                                              "); save it again with leash profile save")));
  }
  {
    ASSIGN_OR_RETURN(Snapshot snapshot, ReadSnapshot());
    const engine::Resolver resolver(*host.floor, snapshot.bindings, snapshot.profiles);
    engine::BindJudgement first = engine::JudgeBindCompletely(
        resolver, check.scope, profile, *judged->fragment, acks, host.agent_accounts,
        PolicyJudgeFor(host));
    if (first.refusal) return Refused(*std::move(first.refusal));
  }
  if (options_.after_bind_judgement_for_testing) options_.after_bind_judgement_for_testing();

  // ...then, under the lock, make sure what was judged is what is on disk.
  RETURN_IF_ERROR(EnsureFolders());
  ASSIGN_OR_RETURN(Locked locked, LockForWrite());
  absl::StatusOr<ProfileStore::Loaded> now = profiles_.Load(profile);
  if (!now.ok() && !absl::IsNotFound(now.status())) return now.status();
  if (!now.ok() || now->yaml != judged->yaml) {
    return Refused(engine::MakeRefusal(
        engine::kRefusalChanged,
        absl::StrCat("profile '", profile, "' ", now.ok() ? "changed" : "was deleted",
                     " on disk while this bind was being judged; nothing was written — run the "
                     "command again to judge the profile as it is now")));
  }
  const engine::Resolver resolver(*host.floor, locked.bindings, locked.library);
  // Consent and validate in one judgement: a refusal lists every finding, and the re-run line
  // it prints is one that would be written.
  engine::BindJudgement judgement = engine::JudgeBindCompletely(
      resolver, check.scope, profile, *now->fragment, acks, host.agent_accounts,
      PolicyJudgeFor(host));
  if (judgement.refusal) return Refused(*std::move(judgement.refusal));
  WriteOutcome outcome;
  // The consent for the change itself (a rebind dropping what the old binding denied) is not
  // the binding's: it goes to the ledger first, and a bind whose record cannot be written does
  // not happen.
  const engine::Binding* old = locked.bindings.Find(judgement.binding.scope);
  if (std::optional<Refusal> unrecorded = RecordConsent(
          kLedgerBind, who, judgement.binding.scope, judgement.binding.profile,
          judgement.change_acks,
          old == nullptr ? absl::StrCat(judgement.binding.scope, " was not bound")
                         : absl::StrCat(judgement.binding.scope, " is still bound to '",
                                        old->profile, "'"),
          outcome.notices)) {
    return Refused(*std::move(unrecorded));
  }
  locked.bindings.Put(judgement.binding);
  RETURN_IF_ERROR(base::WriteFileAtomically(bindings_path(), engine::EmitBindingsYaml(locked.bindings),
                                      kFileMode));
  outcome.written = true;
  outcome.notices.insert(outcome.notices.begin(), judgement.notices.begin(),
                         judgement.notices.end());
  return outcome;
}

absl::StatusOr<WriteOutcome> BindingStore::Unbind(absl::string_view scope,
                                                  const std::vector<std::string>& acks,
                                                  absl::string_view who, const HostInputs& host) {
  if (!DirExists(options_.state_dir)) {
    return Refused(engine::MakeRefusal(engine::kRefusalScope,
                                       absl::StrCat("there is no binding for ", scope)));
  }
  ASSIGN_OR_RETURN(Locked locked, LockForWrite());
  engine::UnbindJudgement judgement =
      host.floor.ok()
          ? engine::JudgeUnbindCompletely(*host.floor, locked.bindings, locked.library, scope,
                                          host.agent_accounts, acks, PolicyJudgeFor(host))
          : engine::JudgeUnbind(host.floor, locked.bindings, locked.library, scope,
                                host.agent_accounts, acks);
  if (judgement.refusal) return Refused(*std::move(judgement.refusal));

  // The record first: "an unbind whose record cannot be written does not happen". An unbind
  // is recorded even when it needed no consent: the record is its audit trail.
  UnbindRecord record{options_.now(), std::string(who), judgement.binding.scope,
                      judgement.binding.profile, judgement.acks};
  absl::StatusOr<UnbindLedger::Appended> appended = ledger_.Append(record);
  if (!appended.ok()) {
    return Refused(engine::MakeRefusal(
        engine::kRefusalLedger,
        absl::StrCat("the consent ledger record could not be written (",
                     appended.status().message(), "), so the unbind did not happen: ", scope,
                     " is still bound to '", judgement.binding.profile, "'")));
  }
  locked.bindings.Remove(scope);
  absl::Status written = base::WriteFileAtomically(
      bindings_path(), engine::EmitBindingsYaml(locked.bindings), kFileMode);
  if (!written.ok()) {
    return absl::Status(
        written.code(),
        absl::StrCat("the unbind of ", scope, " is recorded in ", ledger_.path(),
                     " but bindings.yaml was not rewritten (", written.message(),
                     "): the binding is still in force; run the unbind again"));
  }
  WriteOutcome outcome;
  outcome.written = true;
  outcome.notices = std::move(judgement.notices);
  if (!appended->torn_notice.empty()) outcome.notices.push_back(appended->torn_notice);
  return outcome;
}

absl::StatusOr<Snapshot> BindingStore::ReadSnapshot() const {
  Snapshot snapshot;
  if (!DirExists(options_.state_dir)) return snapshot;
  ASSIGN_OR_RETURN(base::FileLock lock,
                   AcquireBindingsLock(options_.state_dir, base::FileLock::Mode::kShared));
  std::optional<std::string> text;
  RETURN_IF_ERROR(ReadBindingsLocked(text, snapshot.bindings));
  ASSIGN_OR_RETURN(std::vector<std::string> names, profiles_.List());
  for (const std::string& name : names) {
    absl::StatusOr<ProfileStore::Loaded> loaded = profiles_.Load(name);
    if (absl::IsNotFound(loaded.status())) continue;
    if (!loaded.ok()) return loaded.status();
    const std::string source = absl::StrCat("profile:", name);
    if (!loaded->fragment.ok()) {
      leash::v1::Finding& finding = snapshot.findings.emplace_back();
      finding.set_severity(leash::v1::SEVERITY_ERROR);
      finding.set_source(source);
      finding.set_message(std::string(loaded->fragment.status().message()));
    }
    // Accepted on load and reported: an inert deny blocks nothing (critical).
    for (const leash::v1::InertEntry& inert : loaded->inert) {
      leash::v1::Finding& finding = snapshot.findings.emplace_back();
      finding.set_severity(engine::IsInertDeny(inert) ? leash::v1::SEVERITY_CRITICAL
                                                      : leash::v1::SEVERITY_WARNING);
      finding.set_source(source);
      finding.set_field(inert.field());
      finding.set_entry(inert.entry());
      finding.set_message(absl::StrCat("entry '", inert.entry(), "' can never match: ",
                                       inert.reason()));
    }
    snapshot.profiles.emplace(name, std::move(loaded->fragment));
  }
  return snapshot;
}

absl::StatusOr<std::vector<leash::v1::Finding>> BindingStore::Validate(
    const HostInputs& host) const {
  ASSIGN_OR_RETURN(Snapshot snapshot, ReadSnapshot());
  std::vector<leash::v1::Finding> findings;
  if (host.floor.ok()) {
    findings = JudgePolicy(host, *host.floor, snapshot.bindings, snapshot.profiles);
  }
  ASSIGN_OR_RETURN(LedgerContents ledger, ledger_.Read());
  for (const LedgerProblem& problem : ledger.problems) {
    leash::v1::Finding& finding = findings.emplace_back();
    finding.set_severity(leash::v1::SEVERITY_ERROR);
    finding.set_source(ledger_.path());
    finding.set_field(absl::StrCat("line ", problem.line));
    finding.set_message(absl::StrCat(ledger_.path(), ":", problem.line, " (byte ",
                                     problem.offset, "): ", problem.reason));
  }
  return findings;
}

absl::StatusOr<leash::v1::ListProfilesResponse> BindingStore::ListProfiles() const {
  ASSIGN_OR_RETURN(Snapshot snapshot, ReadSnapshot());
  std::vector<std::string> names;
  for (const auto& [name, fragment] : snapshot.profiles) names.push_back(name);
  std::sort(names.begin(), names.end());
  leash::v1::ListProfilesResponse response;
  for (const std::string& name : names) {
    leash::v1::ProfileSummary& summary = *response.add_profiles();
    summary.set_name(name);
    for (const std::string& scope : BoundTo(snapshot.bindings, name)) summary.add_bound_to(scope);
  }
  return response;
}

absl::StatusOr<leash::v1::ShowProfileResponse> BindingStore::ShowProfile(
    absl::string_view name) const {
  ASSIGN_OR_RETURN(ProfileStore::Loaded loaded, profiles_.Load(name));
  ASSIGN_OR_RETURN(Snapshot snapshot, ReadSnapshot());
  leash::v1::ShowProfileResponse response;
  response.set_name(loaded.name);
  response.set_yaml(loaded.yaml);
  if (loaded.fragment.ok()) *response.mutable_fragment() = *loaded.fragment;
  for (const std::string& scope : BoundTo(snapshot.bindings, name)) response.add_bound_to(scope);
  return response;
}

absl::StatusOr<leash::v1::ListBindingsResponse> BindingStore::ListBindings() const {
  ASSIGN_OR_RETURN(Snapshot snapshot, ReadSnapshot());
  leash::v1::ListBindingsResponse response;
  for (const engine::Binding& binding : snapshot.bindings.entries()) {
    leash::v1::Binding& out = *response.add_bindings();
    out.set_scope(binding.scope);
    out.set_profile(binding.profile);
    for (const std::string& ack : binding.acks) out.add_acks(ack);
    // A binding whose profile is gone (deleted with consent, or its file removed by hand) holds
    // its subjects fail-closed; shown here so that it is never mistaken for one in force.
    auto profile = snapshot.profiles.find(binding.profile);
    const std::string held = binding.scope == "global"
                                 ? std::string("every subject on the host is")
                                 : absl::StrCat(binding.scope, " is");
    const std::string unbind =
        engine::RenderCommand({"sudo", "leash", "unbind", binding.scope},
                              {absl::StrCat("fail_closed:", binding.profile)});
    if (profile == snapshot.profiles.end()) {
      out.set_dangling(true);
      out.set_problem(absl::StrCat("profile '", binding.profile, "' does not exist (",
                                   profiles_.PathFor(binding.profile), "): ", held,
                                   " denied everything (fail-closed) until it is saved again "
                                   "or the binding is removed: ",
                                   unbind));
    } else if (!profile->second.ok()) {
      out.set_problem(absl::StrCat("profile '", binding.profile, "' does not load (",
                                   profile->second.status().message(), "): ", held,
                                   " denied everything (fail-closed) until it is saved again"));
    }
  }
  return response;
}

}  // namespace leash::controlplane
