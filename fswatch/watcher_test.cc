// The watcher's decision core, driven through the fake fanotify source: who is judged, by which
// policy, on what path, what happens when something cannot be known, that every event is
// answered once and released once, and that a published map is in force when Publish returns.
#include "fswatch/watcher.h"

#include <sys/fanotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cerrno>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "engine/compiled_policy.h"
#include "engine/decision_record.h"
#include "fswatch/testing/fake_fanotify_source.h"
#include "fswatch/testing/fake_process_facts.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::fswatch {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using testing::FakeEvent;
using testing::FakeFanotifySource;

constexpr pid_t kSelf = 4242;
constexpr uint32_t kWhite = 2001;    // whitelist filesystem + commands, fail_mode closed
constexpr uint32_t kBlack = 2002;    // blacklist filesystem + commands, fail_mode open
constexpr uint32_t kNoPolicy = 2003; // no policy, closed
constexpr uint32_t kNoPolicyOpen = 2004;
constexpr uint32_t kEnforcerOff = 2005;
constexpr uint32_t kUnmapped = 3000;
// Subordinate UIDs (/etc/subuid) of kWhite and kNoPolicy: a process of theirs inside a user
// namespace they made runs under one of these host UIDs.
constexpr uint32_t kWhiteSubordinateFirst = 200000;
constexpr uint32_t kWhiteSubordinateLast = 265535;
constexpr uint32_t kNoPolicySubordinate = 300000;

class RecordingSink : public engine::DecisionSink {
 public:
  void Record(leash::v1::DecisionRecord record) override {
    std::lock_guard<std::mutex> lock(mu_);
    records_.push_back(std::move(record));
  }
  std::vector<leash::v1::DecisionRecord> records() {
    std::lock_guard<std::mutex> lock(mu_);
    return records_;
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    records_.clear();
  }

 private:
  std::mutex mu_;
  std::vector<leash::v1::DecisionRecord> records_;
};

leash::v1::Config WhitelistConfig() {
  leash::v1::Config config;
  config.set_fail_mode("closed");
  config.mutable_filesystem()->set_mode(leash::v1::MODE_WHITELIST);
  config.mutable_filesystem()->mutable_allow()->add_entries("/t/ok");
  config.mutable_filesystem()->mutable_deny()->add_entries("/t/ok/secret");
  config.mutable_commands()->set_mode(leash::v1::MODE_WHITELIST);
  config.mutable_commands()->mutable_allow()->add_entries("true");
  config.mutable_commands()->mutable_allow()->add_entries("/t/bin/ok");
  return config;
}

leash::v1::Config BlacklistConfig() {
  leash::v1::Config config;
  config.set_fail_mode("open");
  config.mutable_filesystem()->set_mode(leash::v1::MODE_BLACKLIST);
  config.mutable_filesystem()->mutable_deny()->add_entries("/t/no");
  config.mutable_commands()->set_mode(leash::v1::MODE_BLACKLIST);
  config.mutable_commands()->mutable_deny()->add_entries("ssh");
  return config;
}

policystream::SubjectEntry WithPolicy(uint32_t uid, const leash::v1::Config& config) {
  policystream::SubjectEntry entry;
  entry.uid = uid;
  entry.account = "lfs-" + std::to_string(uid);
  entry.policy =
      std::make_shared<const engine::CompiledPolicy>(engine::CompiledPolicy::Compile(config));
  return entry;
}

policystream::SubjectEntry WithoutPolicy(uint32_t uid, engine::FailMode mode) {
  policystream::SubjectEntry entry;
  entry.uid = uid;
  entry.account = "lfs-" + std::to_string(uid);
  entry.no_policy_reason = "dangling profile 'gone'";
  entry.no_policy_fail_mode = mode;
  return entry;
}

policystream::SubjectMapPtr StandardMap() {
  auto map = std::make_shared<policystream::SubjectMap>();
  (*map)[kWhite] = WithPolicy(kWhite, WhitelistConfig());
  (*map)[kWhite].subordinate_uids = {{kWhiteSubordinateFirst, kWhiteSubordinateLast}};
  (*map)[kBlack] = WithPolicy(kBlack, BlacklistConfig());
  (*map)[kNoPolicy] = WithoutPolicy(kNoPolicy, engine::FailMode::kClosed);
  (*map)[kNoPolicy].subordinate_uids = {{kNoPolicySubordinate, kNoPolicySubordinate}};
  (*map)[kNoPolicyOpen] = WithoutPolicy(kNoPolicyOpen, engine::FailMode::kOpen);
  leash::v1::Config off = WhitelistConfig();
  off.mutable_enforcers()->set_filesystem(false);
  (*map)[kEnforcerOff] = WithPolicy(kEnforcerOff, off);
  return map;
}

class WatcherTest : public ::testing::Test {
 protected:
  WatcherTest() : watcher_(source_, sink_, Options()) {
    watcher_.Publish(StandardMap(), 1);
    sink_.Clear();  // the no-policy announcements; tested on their own below
  }
  static WatcherOptions Options() {
    WatcherOptions options;
    options.self_pid = kSelf;
    return options;
  }
  // Runs the loop until nothing is pending.
  void Drain() {
    while (source_.pending() > 0) ASSERT_EQ(watcher_.RunOnce(0), 0);
  }
  bool Allowed(int fd) {
    bool allow = false;
    EXPECT_TRUE(source_.AnswerFor(fd, allow)) << "fd " << fd << " not answered exactly once";
    return allow;
  }
  void TearDown() override { EXPECT_TRUE(source_.AllReleasedOnce()); }

  FakeFanotifySource source_;
  RecordingSink sink_;
  Watcher watcher_;
};

struct Case {
  const char* rule;
  uint64_t mask;
  uint32_t uid;
  const char* path;
  bool allow;
  const char* reason_fragment;  // nullptr: no record expected
};

class DecisionTableTest : public WatcherTest, public ::testing::WithParamInterface<Case> {};

TEST_P(DecisionTableTest, AnswersAndLogs) {
  const Case& c = GetParam();
  FakeEvent event;
  event.mask = c.mask;
  event.pid = 1234;
  event.creds = Creds{c.uid, c.uid, c.uid, c.uid};
  event.path = c.path;
  event.facts.regular = true;
  event.facts.mode = S_IFREG | 0644;
  event.facts.mount = FileFacts::Mount::kOurs;
  const int fd = source_.Push(event);
  Drain();
  EXPECT_EQ(Allowed(fd), c.allow) << c.rule;
  const auto records = sink_.records();
  if (c.reason_fragment == nullptr) {
    EXPECT_TRUE(records.empty()) << c.rule << ": " << records.front().reason();
    return;
  }
  ASSERT_EQ(records.size(), 1u) << c.rule;
  // A subordinate UID's event is logged under the subject's own UID.
  const uint32_t subject_uid = c.uid >= kWhiteSubordinateFirst && c.uid <= kWhiteSubordinateLast
                                   ? kWhite
                               : c.uid == kNoPolicySubordinate ? kNoPolicy
                                                               : c.uid;
  EXPECT_EQ(records[0].uid(), subject_uid);
  EXPECT_EQ(records[0].action(), c.allow ? "allow" : "block");
  EXPECT_EQ(records[0].surface(), c.mask == FAN_OPEN_EXEC_PERM ? "commands" : "filesystem");
  EXPECT_THAT(records[0].reason(), HasSubstr(c.reason_fragment)) << c.rule;
  // The same shape engine::MakeDecisionRecord gives ts: 2026-11-29T21:33:20.123456Z.
  EXPECT_EQ(records[0].ts().size(), 27u) << records[0].ts();
  EXPECT_EQ(records[0].ts().back(), 'Z');
  EXPECT_EQ(records[0].ts()[19], '.');
  EXPECT_EQ(records[0].ref().size(), 8u);
  if (c.mask == FAN_OPEN_EXEC_PERM) {
    EXPECT_EQ(records[0].subject().binary(), c.path);
  } else {
    EXPECT_EQ(records[0].subject().path(), c.path);
  }
}

// What a successor watcher will need for an event this one read: its subject's own UID, also
// when the process runs under one of the subject's subordinate UIDs.
TEST_F(WatcherTest, ASubordinateUidsEventIsNotedAsItsSubjects) {
  FakeEvent event;
  event.mask = FAN_OPEN_PERM;
  event.pid = 1234;
  const uint32_t inner = kWhiteSubordinateFirst + 7;
  event.creds = Creds{inner, inner, inner, inner};
  event.path = "/t/other";
  event.facts.regular = true;
  event.facts.mode = S_IFREG | 0644;
  event.facts.mount = FileFacts::Mount::kOurs;
  const int fd = source_.Push(event);
  event.creds = Creds{kUnmapped, kUnmapped, kUnmapped, kUnmapped};
  const int other = source_.Push(event);
  Drain();
  EXPECT_EQ(source_.NotedFor(fd), kWhite);
  EXPECT_EQ(source_.NotedFor(other), kUnmapped);
  EXPECT_FALSE(Allowed(fd));
  EXPECT_TRUE(Allowed(other));
}

// A directory's open is a listing, and its line says so (engine::kDirectoryListing): `leash
// suggest` must not make it an entry, which would allow every file under it. A file's does not.
TEST_F(WatcherTest, ADirectorysLineSaysItWasAListing) {
  FakeEvent event;
  event.mask = FAN_OPEN_PERM;
  event.pid = 1234;
  event.creds = Creds{kWhite, kWhite, kWhite, kWhite};
  event.facts.mount = FileFacts::Mount::kOurs;
  event.path = "/t";  // above the allow entry /t/ok: listed by name only
  event.facts.mode = S_IFDIR | 0755;
  const int above = source_.Push(event);
  event.path = "/t/other";
  const int unlisted = source_.Push(event);
  event.path = "/t/ok/a";
  event.facts.regular = true;
  event.facts.mode = S_IFREG | 0644;
  const int file = source_.Push(event);
  Drain();
  EXPECT_TRUE(Allowed(above));
  EXPECT_FALSE(Allowed(unlisted));
  EXPECT_TRUE(Allowed(file));
  const auto records = sink_.records();
  ASSERT_EQ(records.size(), 3u);
  EXPECT_TRUE(absl::EndsWith(records[0].reason(), engine::kDirectoryListing))
      << records[0].reason();
  EXPECT_TRUE(absl::EndsWith(records[1].reason(), engine::kDirectoryListing))
      << records[1].reason();
  EXPECT_FALSE(absl::StrContains(records[2].reason(), engine::kDirectoryListing))
      << records[2].reason();
}

INSTANTIATE_TEST_SUITE_P(
    Rules, DecisionTableTest,
    ::testing::Values(
        Case{"unmapped uid is allowed and not logged", FAN_OPEN_PERM, kUnmapped, "/t/no/x", true,
             nullptr},
        Case{"root is an unmapped uid", FAN_OPEN_PERM, 0, "/t/no/x", true, nullptr},
        Case{"a subject's subordinate uid is judged by its whitelist", FAN_OPEN_PERM,
             kWhiteSubordinateFirst + 5, "/t/other", false, "not in allow list"},
        Case{"the last uid of a subordinate range is the subject's too", FAN_OPEN_EXEC_PERM,
             kWhiteSubordinateLast, "/t/bin/ssh", false, "not in allow list"},
        Case{"a subordinate uid may do what the subject may", FAN_OPEN_PERM,
             kWhiteSubordinateFirst, "/t/ok/a", true, "matches allow entry '/t/ok'"},
        Case{"the uid past a subordinate range is nobody's", FAN_OPEN_PERM,
             kWhiteSubordinateLast + 1, "/t/other", true, nullptr},
        Case{"a no-policy subject's subordinate uid is denied", FAN_OPEN_PERM,
             kNoPolicySubordinate, "/t/ok/a", false, "subject has no policy"},
        Case{"whitelist allows a listed path", FAN_OPEN_PERM, kWhite, "/t/ok/a", true,
             "matches allow entry '/t/ok'"},
        Case{"whitelist denies an unlisted path", FAN_OPEN_PERM, kWhite, "/t/other", false,
             "not in allow list"},
        Case{"deny wins over allow", FAN_OPEN_PERM, kWhite, "/t/ok/secret/k", false,
             "matches deny entry '/t/ok/secret'"},
        Case{"exec is judged as a command by basename", FAN_OPEN_EXEC_PERM, kWhite,
             "/t/bin/true", true, "matches allow entry 'true'"},
        Case{"exec is judged as a command by path", FAN_OPEN_EXEC_PERM, kWhite, "/t/bin/ok",
             true, "matches allow entry '/t/bin/ok'"},
        Case{"exec of an unlisted binary is denied under a commands whitelist",
             FAN_OPEN_EXEC_PERM, kWhite, "/t/bin/ssh", false, "not in allow list"},
        Case{"an open is not judged by the commands policy", FAN_OPEN_PERM, kWhite,
             "/t/bin/true", false, "filesystem: /t/bin/true not in allow list"},
        Case{"blacklist allows what it does not list", FAN_OPEN_PERM, kBlack, "/t/ok/a", true,
             "not in deny list (blacklist)"},
        Case{"blacklist denies a listed path", FAN_OPEN_PERM, kBlack, "/t/no/s", false,
             "matches deny entry '/t/no'"},
        Case{"command blacklist denies by name anywhere", FAN_OPEN_EXEC_PERM, kBlack,
             "/opt/x/ssh", false, "matches deny entry 'ssh'"},
        Case{"a renamed binary evades a command blacklist (the spec's open gap)",
             FAN_OPEN_EXEC_PERM, kBlack, "/t/bin/not-ssh", true, "not in deny list"},
        Case{"no policy is denied under fail_mode closed", FAN_OPEN_PERM, kNoPolicy, "/t/ok/a",
             false, "has no policy (dangling profile 'gone'); blocked because fail_mode is closed"},
        Case{"no policy is denied on exec too", FAN_OPEN_EXEC_PERM, kNoPolicy, "/t/bin/true",
             false, "has no policy"},
        Case{"no policy is allowed under fail_mode open", FAN_OPEN_PERM, kNoPolicyOpen,
             "/t/no/s", true, "allowed because fail_mode is open"},
        Case{"a subject with the filesystem enforcer off is not judged", FAN_OPEN_PERM,
             kEnforcerOff, "/t/other", true, nullptr}),
    [](const ::testing::TestParamInfo<Case>& info) {
      std::string name;
      for (const char* c = info.param.rule; *c; ++c) {
        name.push_back(isalnum(static_cast<unsigned char>(*c)) ? *c : '_');
      }
      return name;
    });

// The commands rules on exec events. kWhite allows `true` by name and /t/bin/ok by path.
constexpr char kLoader[] = "/usr/lib/ld.so.test";
constexpr char kLoaderInterp[] = "/lib64/ld.so.test";  // what PT_INTERP says: a link to it

// A permission event `mask` of `pid` (all of whose ids are `uid`) on the regular file `path`.
FakeEvent EventOf(uint64_t mask, pid_t pid, uint32_t uid, const std::string& path) {
  FakeEvent event;
  event.mask = mask;
  event.pid = pid;
  event.creds = Creds{uid, uid, uid, uid};
  event.path = path;
  event.facts.regular = true;
  event.facts.mode = S_IFREG | 0755;
  event.facts.mount = FileFacts::Mount::kOurs;
  event.facts.dev = 8;
  event.facts.ino = path.size();  // distinct enough for these paths
  return event;
}

FakeEvent ExecOf(pid_t pid, uint32_t uid, const std::string& path) {
  return EventOf(FAN_OPEN_EXEC_PERM, pid, uid, path);
}

FakeEvent DynamicProgram(pid_t pid, const std::string& path) {
  FakeEvent event = ExecOf(pid, kWhite, path);
  event.elf_interpreter = kLoaderInterp;
  return event;
}

FakeEvent LoaderOpen(pid_t pid, bool by_the_elf_loader) {
  FakeEvent event = ExecOf(pid, kWhite, kLoader);
  event.facts.ino = 777;
  event.loading_elf_interpreter = by_the_elf_loader;
  return event;
}

TEST_F(WatcherTest, TheInterpreterOfAnAllowedExecIsAllowedWithoutListingIt) {
  source_.SetIdentity(kLoaderInterp, 8, 777);
  const int program = source_.Push(DynamicProgram(1234, "/usr/bin/true"));
  Drain();
  const int loader = source_.Push(LoaderOpen(1234, true));
  Drain();
  EXPECT_TRUE(Allowed(program));
  EXPECT_TRUE(Allowed(loader));
  const auto records = sink_.records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_THAT(records[1].reason(), HasSubstr("is the ELF interpreter of /usr/bin/true"));
}

// Audit: the subject's events are judged as its policy says; a block is answered allow and
// logged as the block, enforced: false, and counted. An allow stays a plain allow, and the
// interpreter of a program let through is part of its exec, not a would-be block of its own.
TEST_F(WatcherTest, UnderAuditABlockIsAnsweredAllowAndLoggedNotEnforced) {
  leash::v1::Config audited = WhitelistConfig();
  audited.mutable_filesystem()->set_audit(true);
  audited.mutable_commands()->set_audit(true);
  auto map = std::make_shared<policystream::SubjectMap>(*StandardMap());
  (*map)[kWhite] = WithPolicy(kWhite, audited);
  (*map)[kWhite].subordinate_uids = {{kWhiteSubordinateFirst, kWhiteSubordinateLast}};
  watcher_.Publish(map, 2);
  sink_.Clear();
  source_.SetIdentity(kLoaderInterp, 8, 777);

  FakeEvent open;
  open.mask = FAN_OPEN_PERM;
  open.pid = 1234;
  open.creds = Creds{kWhite, kWhite, kWhite, kWhite};
  open.facts.regular = true;
  open.facts.mode = S_IFREG | 0644;
  open.facts.mount = FileFacts::Mount::kOurs;
  open.path = "/t/ok/secret";  // a deny entry
  const int denied = source_.Push(open);
  open.path = "/t/elsewhere";  // not on the allow list
  const int unlisted = source_.Push(open);
  open.path = "/t/ok/file";  // allowed
  const int allowed = source_.Push(open);
  Drain();
  const int program = source_.Push(DynamicProgram(1240, "/usr/bin/curl"));
  Drain();
  const int loader = source_.Push(LoaderOpen(1240, true));
  Drain();
  for (const int fd : {denied, unlisted, allowed, program, loader}) EXPECT_TRUE(Allowed(fd));
  EXPECT_EQ(watcher_.audited_blocks(), 3u);

  const auto records = sink_.records();
  ASSERT_EQ(records.size(), 5u);
  for (const int i : {0, 1, 3}) {
    EXPECT_EQ(records[i].action(), "block") << i;
    EXPECT_TRUE(records[i].has_enforced()) << i;
    EXPECT_FALSE(records[i].enforced()) << i;
  }
  EXPECT_THAT(records[0].reason(), HasSubstr("deny entry"));
  EXPECT_EQ(records[3].subject().binary(), "/usr/bin/curl");
  for (const int i : {2, 4}) {
    EXPECT_EQ(records[i].action(), "allow") << i;
    EXPECT_FALSE(records[i].has_enforced()) << i;
  }
  EXPECT_THAT(records[4].reason(), HasSubstr("is the ELF interpreter of /usr/bin/curl"));

  // Counted per subject and surface, as `leash status` shows them; a subordinate UID's would-be
  // block is its subject's, as its line is.
  FakeEvent inner = open;
  inner.creds = Creds{kWhiteSubordinateFirst + 3, kWhiteSubordinateFirst + 3,
                      kWhiteSubordinateFirst + 3, kWhiteSubordinateFirst + 3};
  inner.path = "/t/elsewhere";
  const int subordinate = source_.Push(inner);
  Drain();
  EXPECT_TRUE(Allowed(subordinate));
  ASSERT_EQ(sink_.records().size(), 6u);
  EXPECT_EQ(sink_.records()[5].uid(), kWhite);
  EXPECT_FALSE(sink_.records()[5].enforced());
  EXPECT_EQ(watcher_.would_be_blocks().Count(kWhite, leash::v1::SURFACE_FILESYSTEM), 3u);
  EXPECT_EQ(watcher_.would_be_blocks().Count(kWhite, leash::v1::SURFACE_COMMANDS), 1u);
  EXPECT_EQ(watcher_.would_be_blocks().Count(kWhiteSubordinateFirst + 3, leash::v1::SURFACE_FILESYSTEM), 0u);

  // Audit off again: the same deny is enforced, and not counted.
  watcher_.Publish(StandardMap(), 3);
  open.path = "/t/ok/secret";
  const int enforced = source_.Push(open);
  Drain();
  EXPECT_FALSE(Allowed(enforced));
  EXPECT_EQ(watcher_.audited_blocks(), 4u);
  EXPECT_EQ(watcher_.would_be_blocks().Count(kWhite, leash::v1::SURFACE_FILESYSTEM), 3u);
  google::protobuf::RepeatedPtrField<leash::v1::WouldBeBlocks> beat;
  watcher_.would_be_blocks().Fill(&beat);
  EXPECT_EQ(beat.size(), 2);
}

// Rule L4: audit never lifts a deny written above it. The subject's own tier put filesystem and
// commands in audit; what is written above it (SubjectPolicy.audit_above) denies /t/floor and
// /t/bin/floor. Those stay denied, and so do a second name of a file the subject could have
// made (the tier above denies some path) and an open through a foreign mount (the tier above
// would fail on it too); each is logged enforced: true. The subject's own denies are audited.
TEST_F(WatcherTest, AuditNeverLiftsADenyWrittenAboveIt) {
  leash::v1::Config config;
  config.set_fail_mode("closed");
  config.mutable_filesystem()->set_mode(leash::v1::MODE_BLACKLIST);
  config.mutable_filesystem()->set_audit(true);
  config.mutable_filesystem()->mutable_deny()->add_entries("/t/floor");
  config.mutable_filesystem()->mutable_deny()->add_entries("/t/own");
  config.mutable_commands()->set_mode(leash::v1::MODE_BLACKLIST);
  config.mutable_commands()->set_audit(true);
  config.mutable_commands()->mutable_deny()->add_entries("/t/bin/floor");
  config.mutable_commands()->mutable_deny()->add_entries("/t/bin/own");
  leash::v1::Config above = config;
  above.mutable_filesystem()->clear_audit();
  above.mutable_filesystem()->mutable_deny()->Clear();
  above.mutable_filesystem()->mutable_deny()->add_entries("/t/floor");
  above.mutable_commands()->clear_audit();
  above.mutable_commands()->mutable_deny()->Clear();
  above.mutable_commands()->mutable_deny()->add_entries("/t/bin/floor");
  auto map = std::make_shared<policystream::SubjectMap>(*StandardMap());
  policystream::SubjectEntry entry = WithPolicy(kWhite, config);
  entry.policy = std::make_shared<const engine::CompiledPolicy>(
      engine::CompiledPolicy::Compile(config, {}, &above));
  (*map)[kWhite] = entry;
  watcher_.Publish(map, 2);
  sink_.Clear();

  FakeEvent open;
  open.mask = FAN_OPEN_PERM;
  open.pid = 1234;
  open.creds = Creds{kWhite, kWhite, kWhite, kWhite};
  open.facts.regular = true;
  open.facts.mode = S_IFREG | 0644;
  open.facts.mount = FileFacts::Mount::kOurs;
  open.path = "/t/floor/x";
  const int floor_file = source_.Push(open);
  open.path = "/t/own/x";
  const int own_file = source_.Push(open);
  FakeEvent link = open;  // the subject's own file with a second name: it could be /t/floor/x
  link.path = "/t/work/link";
  link.facts.nlink = 2;
  link.facts.uid = kWhite;
  link.facts.gid = kWhite;
  link.facts.mode = S_IFREG | 0600;
  const int second_name = source_.Push(link);
  FakeEvent foreign = open;
  foreign.path = "/t/work/file";
  foreign.facts.mount = FileFacts::Mount::kForeign;
  const int foreign_mount = source_.Push(foreign);
  const int floor_exec = source_.Push(ExecOf(1300, kWhite, "/t/bin/floor"));
  const int own_exec = source_.Push(ExecOf(1301, kWhite, "/t/bin/own"));
  Drain();

  for (const int fd : {floor_file, second_name, foreign_mount, floor_exec}) {
    EXPECT_FALSE(Allowed(fd)) << fd;
  }
  for (const int fd : {own_file, own_exec}) EXPECT_TRUE(Allowed(fd)) << fd;
  const auto records = sink_.records();
  ASSERT_EQ(records.size(), 6u);
  for (const int i : {0, 2, 3, 4}) {
    EXPECT_EQ(records[i].action(), "block") << i;
    EXPECT_TRUE(records[i].has_enforced() && records[i].enforced()) << i << records[i].reason();
    EXPECT_THAT(engine::DecisionLine(records[i]), HasSubstr("\"enforced\":true")) << i;
  }
  for (const int i : {1, 5}) {
    EXPECT_EQ(records[i].action(), "block") << i;
    EXPECT_TRUE(records[i].has_enforced() && !records[i].enforced()) << i;
  }
  EXPECT_EQ(records[4].subject().binary(), "/t/bin/floor");
  // Only what audit let through is a would-be block.
  EXPECT_EQ(watcher_.audited_blocks(), 2u);
  EXPECT_EQ(watcher_.would_be_blocks().Count(kWhite, leash::v1::SURFACE_FILESYSTEM), 1u);
  EXPECT_EQ(watcher_.would_be_blocks().Count(kWhite, leash::v1::SURFACE_COMMANDS), 1u);
}

TEST_F(WatcherTest, RunningTheLoaderDirectlyIsACommandOfItsOwn) {
  source_.SetIdentity(kLoaderInterp, 8, 777);
  const int direct = source_.Push(LoaderOpen(1234, false));
  Drain();
  EXPECT_FALSE(Allowed(direct));
  // After an allowed exec that never reached its interpreter (it failed, e.g. a bad argv),
  // the loader run as a program is still a command: its open is not the ELF loader's.
  const int program = source_.Push(DynamicProgram(1235, "/usr/bin/true"));
  Drain();
  const int after_failed_exec = source_.Push(LoaderOpen(1235, false));
  Drain();
  EXPECT_TRUE(Allowed(program));
  EXPECT_FALSE(Allowed(after_failed_exec));
  EXPECT_THAT(sink_.records().back().reason(), HasSubstr("not in allow list"));
}

TEST_F(WatcherTest, AnInterpreterIsAllowedOnceAndOnlyForItsOwnProcess) {
  source_.SetIdentity(kLoaderInterp, 8, 777);
  const int program = source_.Push(DynamicProgram(1234, "/usr/bin/true"));
  Drain();
  const int other_process = source_.Push(LoaderOpen(1299, true));
  const int first = source_.Push(LoaderOpen(1234, true));
  const int second = source_.Push(LoaderOpen(1234, true));
  Drain();
  EXPECT_TRUE(Allowed(program));
  EXPECT_FALSE(Allowed(other_process));
  EXPECT_TRUE(Allowed(first));
  EXPECT_FALSE(Allowed(second));
}

TEST_F(WatcherTest, ADeniedProgramsInterpreterIsNotAllowed) {
  source_.SetIdentity(kLoaderInterp, 8, 777);
  const int program = source_.Push(DynamicProgram(1234, "/usr/bin/curl"));
  Drain();
  const int loader = source_.Push(LoaderOpen(1234, true));
  Drain();
  EXPECT_FALSE(Allowed(program));
  EXPECT_FALSE(Allowed(loader));
}

TEST_F(WatcherTest, AnInterpreterOtherThanThePrograms_IsACommandOfItsOwn) {
  // PT_INTERP names another file than the one the kernel opened.
  source_.SetIdentity(kLoaderInterp, 8, 999);
  source_.Push(DynamicProgram(1234, "/usr/bin/true"));
  Drain();
  const int loader = source_.Push(LoaderOpen(1234, true));
  Drain();
  EXPECT_FALSE(Allowed(loader));
}

// The interpreter is judged by identity, never by the name the kernel reports: a file at the
// path PT_INTERP names (as a chroot or another mount namespace shows it) that is not the file
// the host's root resolves that path to is a command of its own.
TEST_F(WatcherTest, AnInterpreterIsTheHostsFileOrACommandOfItsOwn) {
  source_.SetIdentity(kLoaderInterp, 8, 777);
  source_.Push(DynamicProgram(1234, "/usr/bin/true"));
  Drain();
  FakeEvent elsewhere = LoaderOpen(1234, true);
  elsewhere.path = kLoaderInterp;  // the name PT_INTERP says, another file
  elsewhere.facts.ino = 778;
  const int loader = source_.Push(elsewhere);
  Drain();
  EXPECT_FALSE(Allowed(loader));
  ASSERT_EQ(sink_.records().size(), 2u);
  EXPECT_THAT(sink_.records()[1].reason(), Not(HasSubstr("is the ELF interpreter of")));
  EXPECT_THAT(sink_.records()[1].reason(), HasSubstr("not in allow list"));
}

// The very file PT_INTERP names, but one the subject could have made or changed: it passes no
// more than a name entry's program would.
TEST_F(WatcherTest, AnInterpreterTheSubjectCouldHaveMadeIsACommandOfItsOwn) {
  source_.SetIdentity(kLoaderInterp, 8, 777);
  source_.Push(DynamicProgram(1234, "/usr/bin/true"));
  Drain();
  FakeEvent agents = LoaderOpen(1234, true);
  agents.root_controlled = false;
  const int loader = source_.Push(agents);
  Drain();
  EXPECT_FALSE(Allowed(loader));
  ASSERT_EQ(sink_.records().size(), 2u);
  EXPECT_THAT(sink_.records()[1].reason(), Not(HasSubstr("is the ELF interpreter of")));
}

TEST_F(WatcherTest, ANameEntryMatchesOnlyARootControlledProgram) {
  FakeEvent copy = ExecOf(1234, kWhite, "/home/agent/true");
  copy.root_controlled = false;
  const int copied = source_.Push(copy);
  const int system = source_.Push(ExecOf(1235, kWhite, "/usr/bin/true"));
  FakeEvent own = ExecOf(1236, kWhite, "/t/bin/ok");
  own.root_controlled = false;
  const int absolute = source_.Push(own);
  Drain();
  EXPECT_FALSE(Allowed(copied));
  EXPECT_TRUE(Allowed(system));
  EXPECT_TRUE(Allowed(absolute));  // an absolute entry matches as written
  EXPECT_THAT(sink_.records()[0].reason(), HasSubstr("by name only"));
}

TEST_F(WatcherTest, ABlacklistDenyByNameCatchesACopy) {
  FakeEvent copy = ExecOf(1234, kBlack, "/home/agent/ssh");
  copy.root_controlled = false;
  const int fd = source_.Push(copy);
  Drain();
  EXPECT_FALSE(Allowed(fd));
}

TEST_F(WatcherTest, ExecFactsAreNeverAskedForAnOpen) {
  for (int i = 0; i < 10; ++i) source_.PushOpen(1234, kWhite, "/t/ok/file");
  source_.PushOpen(1234, kBlack, "/t/file");
  Drain();
  EXPECT_EQ(source_.exec_fact_calls(), 0);
}

TEST_F(WatcherTest, OwnProcessIsAllowedWithoutIdentifyingIt) {
  FakeEvent event;
  event.mask = FAN_OPEN_PERM;
  event.pid = kSelf;
  event.creds_error = EIO;  // would show up as a denial if identity were consulted
  event.path = "/t/other";
  const int fd = source_.Push(event);
  Drain();
  EXPECT_TRUE(Allowed(fd));
  EXPECT_TRUE(sink_.records().empty());
}

TEST_F(WatcherTest, TheRealUidIdentifiesTheSubjectNotTheEffectiveOne) {
  // The agent running a setuid-root program: ruid stays the agent's.
  FakeEvent setuid_root = {};
  setuid_root.mask = FAN_OPEN_PERM;
  setuid_root.creds = Creds{kWhite, 0, 0, kWhite};
  setuid_root.path = "/t/other";
  setuid_root.facts.mount = FileFacts::Mount::kOurs;
  const int denied = source_.Push(setuid_root);
  // Root acting with the agent's effective UID is root's business, not the agent's.
  FakeEvent root_as_agent = setuid_root;
  root_as_agent.creds = Creds{0, kWhite, kWhite, 0};
  const int allowed = source_.Push(root_as_agent);
  Drain();
  EXPECT_FALSE(Allowed(denied));
  EXPECT_TRUE(Allowed(allowed));
  ASSERT_EQ(sink_.records().size(), 1u);
  EXPECT_EQ(sink_.records()[0].uid(), kWhite);
}

TEST_F(WatcherTest, UnidentifiableProcessIsDeniedUnlessEveryoneIsOpen) {
  FakeEvent event;
  event.mask = FAN_OPEN_PERM;
  event.creds_error = EMFILE;
  event.path = "/t/ok/a";
  const int fd = source_.Push(event);
  FakeEvent gone = event;
  gone.creds_error = ESRCH;
  const int gone_fd = source_.Push(gone);
  Drain();
  EXPECT_FALSE(Allowed(fd));
  EXPECT_FALSE(Allowed(gone_fd));
  // A vanished process is nobody to tell; a failure to identify a live one is critical.
  const auto records = sink_.records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].uid(), kUnknownUid);
  EXPECT_EQ(records[0].severity(), "critical");
  EXPECT_THAT(records[0].reason(), HasSubstr("cannot identify the process"));

  auto open_only = std::make_shared<policystream::SubjectMap>();
  (*open_only)[kNoPolicyOpen] = WithoutPolicy(kNoPolicyOpen, engine::FailMode::kOpen);
  watcher_.Publish(open_only, 2);
  const int fd2 = source_.Push(event);
  Drain();
  EXPECT_TRUE(Allowed(fd2));
}

// What a watcher taking over does with an event its dead predecessor read and never answered,
// by what the predecessor noted in the pending table (sidecar::PendingTable's values).
TEST_F(WatcherTest, AnEventADeadWatcherLeftIsJudgedByTheSubjectsFailMode) {
  constexpr uint64_t kSubject = uint64_t{1} << 32;
  constexpr uint64_t kReadUnknown = 1;
  EXPECT_FALSE(watcher_.JudgeAbandoned(kSubject | kWhite));       // its policy: closed
  EXPECT_TRUE(watcher_.JudgeAbandoned(kSubject | kBlack));        // its policy: open
  EXPECT_FALSE(watcher_.JudgeAbandoned(kSubject | kNoPolicy));    // no policy, closed
  EXPECT_TRUE(watcher_.JudgeAbandoned(kSubject | kNoPolicyOpen)); // no policy, open
  EXPECT_TRUE(watcher_.JudgeAbandoned(kSubject | kEnforcerOff));  // not judged at all
  EXPECT_TRUE(watcher_.JudgeAbandoned(kSubject | kUnmapped));     // not a subject
  EXPECT_TRUE(watcher_.JudgeAbandoned(kSubject | 0));             // root
  // A subordinate UID noted as itself is still its subject's (closed).
  EXPECT_FALSE(watcher_.JudgeAbandoned(kSubject | (kWhiteSubordinateFirst + 1)));
  // Whose it was never learned: the strictest fail_mode of the map.
  EXPECT_FALSE(watcher_.JudgeAbandoned(kReadUnknown));
  EXPECT_FALSE(watcher_.JudgeAbandoned(0));

  watcher_.LogAbandoned(kSubject | kWhite, false);
  watcher_.LogAbandoned(kSubject | kUnmapped, true);  // not a subject's: no record
  watcher_.LogAbandoned(kReadUnknown, false);
  const auto records = sink_.records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].uid(), kWhite);
  EXPECT_EQ(records[0].action(), "block");
  EXPECT_THAT(records[0].reason(), HasSubstr("died before answering it"));
  EXPECT_EQ(records[1].uid(), kUnknownUid);
  EXPECT_EQ(records[1].severity(), "critical");

  auto open_only = std::make_shared<policystream::SubjectMap>();
  (*open_only)[kNoPolicyOpen] = WithoutPolicy(kNoPolicyOpen, engine::FailMode::kOpen);
  watcher_.Publish(open_only, 2);
  EXPECT_TRUE(watcher_.JudgeAbandoned(kReadUnknown));
}

TEST_F(WatcherTest, UnreadablePathFollowsTheSubjectsFailMode) {
  FakeEvent event;
  event.mask = FAN_OPEN_PERM;
  event.creds = Creds{kWhite, kWhite, kWhite, kWhite};
  event.path_error = ENAMETOOLONG;
  const int closed = source_.Push(event);
  event.creds = Creds{kBlack, kBlack, kBlack, kBlack};
  const int open = source_.Push(event);
  Drain();
  EXPECT_FALSE(Allowed(closed));
  EXPECT_TRUE(Allowed(open));
  const auto records = sink_.records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_THAT(records[0].reason(), HasSubstr("cannot read the path"));
  EXPECT_THAT(records[0].reason(), HasSubstr("blocked because fail_mode is closed"));
  EXPECT_THAT(records[1].reason(), HasSubstr("allowed because fail_mode is open"));
}

TEST_F(WatcherTest, OpenThroughAnotherNamespacesMountIsNotJudgedByItsPath) {
  // The agent bind-mounted /t/no over /t/ok in its own namespace: the kernel reports the path
  // it chose. The path says "allowed"; the mount says "not ours".
  FakeEvent event;
  event.mask = FAN_OPEN_PERM;
  event.creds = Creds{kWhite, kWhite, kWhite, kWhite};
  event.path = "/t/ok/s";
  event.facts.regular = true;
  event.facts.mount = FileFacts::Mount::kForeign;
  const int fd = source_.Push(event);
  Drain();
  EXPECT_FALSE(Allowed(fd));
  ASSERT_EQ(sink_.records().size(), 1u);
  EXPECT_THAT(sink_.records()[0].reason(), HasSubstr("mount of another mount namespace"));
}

// The kernel's paths are normal and are ruled on as they are; anything else (which no kernel
// should give) is normalized first, so ".." cannot carry a denied file into an allowed prefix.
TEST_F(WatcherTest, APathThatIsNotNormalIsNormalizedBeforeItIsJudged) {
  FakeEvent event;
  event.mask = FAN_OPEN_PERM;
  event.creds = Creds{kWhite, kWhite, kWhite, kWhite};
  event.facts.regular = true;
  event.facts.mount = FileFacts::Mount::kOurs;
  event.path = "/t/ok/../secret-elsewhere";
  const int escaped = source_.Push(event);
  event.path = "/t/ok/./sub//a";
  const int inside = source_.Push(event);
  Drain();
  EXPECT_FALSE(Allowed(escaped));
  EXPECT_TRUE(Allowed(inside));
  ASSERT_EQ(sink_.records().size(), 2u);
  EXPECT_EQ(sink_.records()[0].reason(),
            "filesystem: /t/secret-elsewhere not in allow list (whitelist)");
  EXPECT_EQ(sink_.records()[1].reason(), "filesystem: /t/ok/sub/a matches allow entry '/t/ok'");
}

TEST_F(WatcherTest, UnlinkedFileIsJudgedByItsLastName) {
  FakeEvent event;
  event.mask = FAN_OPEN_PERM;
  event.creds = Creds{kBlack, kBlack, kBlack, kBlack};
  event.path = "/t/no/s (deleted)";
  event.facts.regular = true;
  event.facts.nlink = 0;
  event.facts.mount = FileFacts::Mount::kOurs;
  const int deleted = source_.Push(event);
  // A file that really is named "... (deleted)" keeps its name.
  event.path = "/t/x (deleted)";
  event.facts.nlink = 1;
  const int named = source_.Push(event);
  Drain();
  EXPECT_FALSE(Allowed(deleted));
  EXPECT_TRUE(Allowed(named));
  EXPECT_EQ(sink_.records()[0].subject().path(), "/t/no/s");
  EXPECT_EQ(sink_.records()[1].subject().path(), "/t/x (deleted)");
}

struct HardLinkCase {
  const char* rule;
  uint32_t subject;
  uint32_t owner;
  uint32_t mode;
  bool protected_hardlinks;
  bool allow;
};

class HardLinkTest : public ::testing::TestWithParam<HardLinkCase> {};

TEST_P(HardLinkTest, SecondNamesTheSubjectCouldHaveMadeAreDenied) {
  const HardLinkCase& c = GetParam();
  FakeFanotifySource source;
  RecordingSink sink;
  WatcherOptions options;
  options.self_pid = kSelf;
  options.protected_hardlinks = c.protected_hardlinks;
  Watcher watcher(source, sink, options);
  watcher.Publish(StandardMap(), 1);
  FakeEvent event;
  event.mask = FAN_OPEN_PERM;
  event.creds = Creds{c.subject, c.subject, c.subject, c.subject};
  event.path = "/t/ok/link";  // allowed by name for both subjects
  event.facts.regular = true;
  event.facts.nlink = 2;
  event.facts.uid = c.owner;
  event.facts.gid = c.owner;
  event.facts.mode = S_IFREG | c.mode;
  event.facts.mount = FileFacts::Mount::kOurs;
  const int fd = source.Push(event);
  while (source.pending() > 0) ASSERT_EQ(watcher.RunOnce(0), 0);
  bool allow = false;
  ASSERT_TRUE(source.AnswerFor(fd, allow));
  EXPECT_EQ(allow, c.allow) << c.rule;
  if (!c.allow) {
    EXPECT_THAT(sink.records().back().reason(), HasSubstr("has 2 names"));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Rules, HardLinkTest,
    ::testing::Values(
        HardLinkCase{"own file with two names under a whitelist", kWhite, kWhite, 0600, true,
                     false},
        HardLinkCase{"own file with two names under a blacklist with deny entries", kBlack,
                     kBlack, 0600, true, false},
        HardLinkCase{"root file the subject may only read could not have been linked by it",
                     kWhite, 0, 0644, true, true},
        HardLinkCase{"world read-write file could have been linked", kWhite, 0, 0666, true,
                     false},
        HardLinkCase{"group read-write file could have been linked", kWhite, 0, 0660, true,
                     false},
        HardLinkCase{"without protected_hardlinks any file could have been linked", kWhite, 0,
                     0644, false, false}),
    [](const ::testing::TestParamInfo<HardLinkCase>& info) {
      std::string name;
      for (const char* c = info.param.rule; *c; ++c) {
        name.push_back(isalnum(static_cast<unsigned char>(*c)) ? *c : '_');
      }
      return name;
    });

TEST_F(WatcherTest, OverflowIsCountedAndReportedCritical) {
  source_.PushOverflow();
  Drain();
  EXPECT_EQ(watcher_.overflows(), 1u);
  ASSERT_EQ(sink_.records().size(), 1u);
  EXPECT_EQ(sink_.records()[0].severity(), "critical");
  EXPECT_THAT(sink_.records()[0].reason(), HasSubstr("queue overflowed"));
}

// The kernel could not open the file for the watcher (any user can make a 0:0 device node) and
// denied the open itself: counted, reported critical, nothing answered, and the loop goes on.
TEST_F(WatcherTest, AnEventTheKernelCouldNotOpenIsCountedAndReportedAndTheLoopGoesOn) {
  source_.PushUnopenable(ENXIO);
  const int fd = source_.PushOpen(200, kWhite, "/t/ok/f");
  Drain();
  EXPECT_EQ(watcher_.unopenable(), 1u);
  ASSERT_GE(sink_.records().size(), 1u);
  EXPECT_EQ(sink_.records()[0].severity(), "critical");
  EXPECT_THAT(sink_.records()[0].reason(), HasSubstr("could not open an event's file"));
  EXPECT_THAT(sink_.records()[0].reason(), HasSubstr("ENXIO"));
  EXPECT_EQ(source_.answers().size(), 1u);  // only the real event's
  EXPECT_TRUE(Allowed(fd));
}

// With FAN_REPORT_FD_ERROR the event names its process: the record goes under its UID.
TEST_F(WatcherTest, AnUnopenableEventWithAPidIsLoggedUnderTheOpenersUid) {
  FakeEvent event;
  event.pid = 4242;
  event.creds = Creds{kWhite, kWhite, kWhite, kWhite};
  source_.PushUnopenable(EMFILE, event);
  Drain();
  EXPECT_EQ(watcher_.unopenable(), 1u);
  ASSERT_EQ(sink_.records().size(), 1u);
  EXPECT_EQ(sink_.records()[0].uid(), kWhite);
  EXPECT_THAT(sink_.records()[0].reason(), HasSubstr("(EMFILE 24) and denied that open itself (pid 4242)"));
  EXPECT_TRUE(source_.answers().empty());
}

// Out of descriptors for good (a leak): every event fails and the kernel denies every open,
// root's too, while the loop keeps making passes, so the watchdog never fires. After the limit
// with no event that had a descriptor, the loop ends (leashd respawns the watcher).
TEST(WatcherStarvationTest, EventsWithoutADescriptorForTheLimitEndTheLoop) {
  FakeFanotifySource source;
  RecordingSink sink;
  WatcherOptions options;
  options.self_pid = kSelf;
  options.descriptor_starvation_limit = absl::Milliseconds(50);
  Watcher watcher(source, sink, options);
  watcher.Publish(std::make_shared<policystream::SubjectMap>(), 1);
  source.PushUnopenable(EMFILE);
  EXPECT_EQ(watcher.RunOnce(0), 0);
  // One event with a descriptor in between: healed, the clock starts again.
  absl::SleepFor(absl::Milliseconds(60));
  source.PushOpen(100, 4242, "/t/f");
  EXPECT_EQ(watcher.RunOnce(0), 0);
  source.PushUnopenable(EMFILE);
  EXPECT_EQ(watcher.RunOnce(0), 0);
  absl::SleepFor(absl::Milliseconds(60));
  source.PushUnopenable(EMFILE);
  EXPECT_EQ(watcher.RunOnce(0), -EMFILE);
  // Other errors (a 0:0 device node's ENXIO) are the opener's file, not the watcher's state.
  FakeFanotifySource other_source;
  Watcher other(other_source, sink, options);
  other.Publish(std::make_shared<policystream::SubjectMap>(), 1);
  other_source.PushUnopenable(ENXIO);
  EXPECT_EQ(other.RunOnce(0), 0);
  absl::SleepFor(absl::Milliseconds(60));
  other_source.PushUnopenable(ENXIO);
  EXPECT_EQ(other.RunOnce(0), 0);
}

TEST_F(WatcherTest, FailedAnswerIsCountedAndReported) {
  FakeEvent event;
  event.mask = FAN_OPEN_PERM;
  event.creds = Creds{kUnmapped, kUnmapped, kUnmapped, kUnmapped};
  event.respond_error = ENOENT;
  source_.Push(event);
  Drain();
  EXPECT_EQ(watcher_.answer_errors(), 1u);
  EXPECT_THAT(sink_.records().back().reason(), HasSubstr("failed (errno 2)"));
}

TEST_F(WatcherTest, EveryEventIsAnsweredOnceAndCounted) {
  std::vector<int> fds;
  for (int i = 0; i < 1000; ++i) {
    fds.push_back(source_.PushOpen(100 + i, i % 2 ? kWhite : kUnmapped, "/t/ok/f"));
  }
  Drain();
  for (int fd : fds) EXPECT_TRUE(Allowed(fd));
  EXPECT_EQ(watcher_.events_answered(), 1000u);
  EXPECT_EQ(sink_.records().size(), 500u);  // only the mapped subject's decisions
}

TEST(WatcherPublish, NoPolicySubjectIsAnnouncedCriticalOnceNotOnEveryMap) {
  FakeFanotifySource source;
  RecordingSink sink;
  WatcherOptions options;
  options.self_pid = kSelf;
  Watcher watcher(source, sink, options);
  watcher.Publish(StandardMap(), 1);
  auto critical = [&] {
    int n = 0;
    for (const auto& record : sink.records()) n += record.severity() == "critical";
    return n;
  };
  EXPECT_EQ(critical(), 2);  // kNoPolicy and kNoPolicyOpen
  EXPECT_THAT(sink.records()[0].reason(), HasSubstr("has no policy (dangling profile 'gone')"));
  watcher.Publish(StandardMap(), 2);
  EXPECT_EQ(critical(), 2);
  // kWhite loses its policy: announced; the others are not repeated.
  auto map = std::make_shared<policystream::SubjectMap>(*StandardMap());
  (*map)[kWhite] = WithoutPolicy(kWhite, engine::FailMode::kClosed);
  watcher.Publish(map, 3);
  EXPECT_EQ(critical(), 3);
  EXPECT_EQ(sink.records().back().uid(), kWhite);
  EXPECT_EQ(watcher.version(), 3u);
}

TEST_F(WatcherTest, ASubjectBeingOnboardedIsDeniedWithoutANoticeAndItsLaterDenialIsAnnounced) {
  auto onboarding = std::make_shared<policystream::SubjectMap>();
  (*onboarding)[kWhite] = WithoutPolicy(kWhite, engine::FailMode::kClosed);
  (*onboarding)[kWhite].onboarding = true;
  watcher_.Publish(onboarding, 2);
  EXPECT_THAT(sink_.records(), IsEmpty());
  // Denied all the same while it is being onboarded, and the open is logged as a block.
  const int fd = source_.PushOpen(100, kWhite, "/t/ok/f");
  Drain();
  EXPECT_FALSE(Allowed(fd));
  ASSERT_EQ(sink_.records().size(), 1u);
  EXPECT_EQ(sink_.records()[0].severity(), "");
  // Its chain failed, so leashd denies it for real: now it is announced, once.
  auto denied = std::make_shared<policystream::SubjectMap>();
  (*denied)[kWhite] = WithoutPolicy(kWhite, engine::FailMode::kClosed);
  watcher_.Publish(denied, 3);
  ASSERT_EQ(sink_.records().size(), 2u);
  EXPECT_EQ(sink_.records()[1].severity(), "critical");
  EXPECT_THAT(sink_.records()[1].reason(), HasSubstr("has no policy (dangling profile 'gone')"));
  watcher_.Publish(denied, 4);
  EXPECT_EQ(sink_.records().size(), 2u);
}

// A watcher holding a map that allows kWhite /t/ok, and a second map denying it everything.
struct SwapFixture {
  SwapFixture() : watcher(source, sink, Options()) {
    auto allow = std::make_shared<policystream::SubjectMap>();
    (*allow)[kWhite] = WithPolicy(kWhite, WhitelistConfig());
    auto deny = std::make_shared<policystream::SubjectMap>();
    (*deny)[kWhite] = WithoutPolicy(kWhite, engine::FailMode::kClosed);
    allowing = allow;
    denying = deny;
    watcher.Publish(allowing, 1);
  }
  static WatcherOptions Options() {
    WatcherOptions options;
    options.self_pid = kSelf;
    return options;
  }
  FakeFanotifySource source;
  RecordingSink sink;
  Watcher watcher;
  policystream::SubjectMapPtr allowing, denying;
};

TEST(WatcherPublish, AMapIsInForceWhenPublishReturns) {
  // The loop runs flat out on one thread while another publishes alternating maps; an event
  // queued after Publish returns must be judged by that map, every time.
  SwapFixture f;
  FakeFanotifySource& source = f.source;
  Watcher& watcher = f.watcher;
  const policystream::SubjectMapPtr allowing = f.allowing;
  const policystream::SubjectMapPtr denying = f.denying;

  std::atomic<bool> stop{false};
  std::thread loop([&] {
    while (!stop.load()) ASSERT_EQ(watcher.RunOnce(0), 0);
  });
  for (int round = 0; round < 300; ++round) {
    const bool allow = round % 2 == 0;
    watcher.Publish(allow ? allowing : denying, 2 + round);
    const int fd = source.PushOpen(99, kWhite, "/t/ok/f");
    bool answered = false;
    bool given = false;
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (!answered && absl::Now() < deadline) {
      answered = source.AnswerFor(fd, given);
      if (!answered) std::this_thread::yield();
    }
    ASSERT_TRUE(answered) << "round " << round;
    ASSERT_EQ(given, allow) << "round " << round << ": judged by the previous map";
  }
  stop.store(true);
  loop.join();
  EXPECT_TRUE(source.AllReleasedOnce());
}

TEST(WatcherPublish, PublishWaitsForTheBatchThatMayStillUseTheOldMap) {
  // The loop has read an event and taken the old map, and is held inside the batch. Publish
  // must not return (and must not free the old map) until that batch is over; the event it
  // holds is answered under the old map before Publish returns, never after.
  SwapFixture f;
  FakeFanotifySource& source = f.source;
  Watcher& watcher = f.watcher;
  const policystream::SubjectMapPtr allowing = f.allowing;
  const policystream::SubjectMapPtr denying = f.denying;

  std::mutex mu;
  std::condition_variable cv;
  bool in_batch = false, release = false;
  source.set_on_creds([&](int) {
    std::unique_lock<std::mutex> lock(mu);
    in_batch = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
  });
  const int held = source.PushOpen(7, kWhite, "/t/ok/f");
  std::thread loop([&] { ASSERT_EQ(watcher.RunOnce(0), 0); });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return in_batch; });
  }
  std::atomic<bool> returned{false};
  std::thread publisher([&] {
    watcher.Publish(denying, 2);
    returned.store(true);
  });
  // Give a wrong Publish every chance to return early.
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_FALSE(returned.load()) << "Publish returned while the loop still held the old map";
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  loop.join();
  publisher.join();
  bool allow = false;
  ASSERT_TRUE(source.AnswerFor(held, allow));
  EXPECT_TRUE(allow);  // judged by the map it was read under
  source.set_on_creds(nullptr);
  const int after = source.PushOpen(7, kWhite, "/t/ok/f");
  ASSERT_EQ(watcher.RunOnce(0), 0);
  ASSERT_TRUE(source.AnswerFor(after, allow));
  EXPECT_FALSE(allow);
}

TEST(WatcherPublish, EventsBeforeAnyMapAreAllowed) {
  FakeFanotifySource source;
  RecordingSink sink;
  WatcherOptions options;
  options.self_pid = kSelf;
  Watcher watcher(source, sink, options);
  const int fd = source.PushOpen(5, kWhite, "/t/other");
  ASSERT_EQ(watcher.RunOnce(0), 0);
  bool allow = false;
  ASSERT_TRUE(source.AnswerFor(fd, allow));
  EXPECT_TRUE(allow);
  EXPECT_TRUE(source.AllReleasedOnce());
}

}  // namespace
}  // namespace leash::fswatch

namespace leash::fswatch {
namespace {

// A subject's open of /etc/subuid whose content gives `line`.
FakeEvent SubuidOpen(uint32_t uid, const std::string& content) {
  FakeEvent event;
  event.mask = FAN_OPEN_PERM;
  event.pid = 1234;
  event.creds = Creds{uid, 0, 0, 0};  // newuidmap: setuid root, the agent's real UID kept
  event.path = "/etc/subuid";
  event.content = content;
  event.facts.regular = true;
  event.facts.mode = S_IFREG | 0644;
  event.facts.mount = FileFacts::Mount::kOurs;
  return event;
}

// "A subordinate range is confined before anyone can use it": newuidmap's open of /etc/subuid is
// held until the map in force holds every range the file gives the agent, and other events are
// answered meanwhile.
TEST_F(WatcherTest, ASubordinateRangeIsConfinedBeforeAnyoneCanUseIt) {
  const std::string added = "lfs-2002:300000:10\n";
  const int held = source_.Push(SubuidOpen(kBlack, added));
  const int in_force = source_.Push(SubuidOpen(kBlack, "bob:400000:10\n"));  // none of its
  Drain();
  bool allow = false;
  EXPECT_FALSE(source_.AnswerFor(held, allow)) << "answered before its range was in force";
  EXPECT_TRUE(Allowed(in_force));
  EXPECT_EQ(watcher_.held_subid_opens(), 1u);
  // The loop goes on answering while it holds one.
  FakeEvent other = SubuidOpen(kBlack, "");
  other.path = "/t/other";
  const int unrelated = source_.Push(other);
  Drain();
  EXPECT_TRUE(Allowed(unrelated));
  // A map that names the range as the subject's while its chain does not hold it yet (leashd
  // tells the sidecars before the chain goes in) changes nothing.
  auto before_chain = std::make_shared<policystream::SubjectMap>(*StandardMap());
  (*before_chain)[kBlack].subordinate_uids = {{300000, 300009}};
  watcher_.Publish(before_chain, 2);
  ASSERT_EQ(watcher_.RunOnce(0), 0);
  EXPECT_FALSE(source_.AnswerFor(held, allow));
  // The map that says its chain holds it: answered, allowed, and logged as the policy's decision.
  auto map = std::make_shared<policystream::SubjectMap>(*before_chain);
  (*map)[kBlack].subordinate_uids_in_chain = {{300000, 300009}};
  watcher_.Publish(map, 3);
  ASSERT_EQ(watcher_.RunOnce(0), 0);
  EXPECT_TRUE(Allowed(held));
  EXPECT_EQ(watcher_.held_subid_opens(), 0u);
}

TEST_F(WatcherTest, AHeldOpenWhoseRangeNeverComesIsDeniedAtItsDeadline) {
  WatcherOptions options = Options();
  options.subid_hold_limit = absl::ZeroDuration();
  Watcher watcher(source_, sink_, options);
  watcher.Publish(StandardMap(), 1);
  sink_.Clear();
  const int fd = source_.Push(SubuidOpen(kBlack, "lfs-2002:0:0\n"));  // every ID
  while (source_.pending() > 0) ASSERT_EQ(watcher.RunOnce(0), 0);
  EXPECT_FALSE(Allowed(fd));
  const auto records = sink_.records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_THAT(records[0].reason(), HasSubstr("not in force"));
  EXPECT_EQ(records[0].action(), "block");
}

TEST_F(WatcherTest, OpensHeldPastTheBoundAndUnreadableFilesAreDenied) {
  std::vector<int> fds;
  for (size_t i = 0; i < 65; ++i) fds.push_back(source_.Push(SubuidOpen(kBlack, "lfs-2002:300000:10\n")));
  Drain();
  bool allow = true;
  EXPECT_FALSE(source_.AnswerFor(fds.front(), allow));
  EXPECT_FALSE(Allowed(fds.back()));  // the 65th: denied at once
  EXPECT_EQ(watcher_.held_subid_opens(), 64u);
  FakeEvent unreadable = SubuidOpen(kBlack, "");
  unreadable.content_error = EIO;
  const int fd = source_.Push(unreadable);
  Drain();
  EXPECT_FALSE(Allowed(fd));
  // Under fail_mode open with no policy, and with the filesystem enforcer off, the hold stays.
  const int no_policy = source_.Push(SubuidOpen(kNoPolicyOpen, "lfs-2004:300000:10\n"));
  const int enforcer_off = source_.Push(SubuidOpen(kEnforcerOff, "lfs-2005:300000:10\n"));
  Drain();
  EXPECT_FALSE(Allowed(no_policy));  // the bound is reached
  EXPECT_FALSE(Allowed(enforcer_off));
  // Once the range is in force every held one is answered.
  auto map = std::make_shared<policystream::SubjectMap>(*StandardMap());
  (*map)[kBlack].subordinate_uids = {{300000, 300009}};
  (*map)[kBlack].subordinate_uids_in_chain = {{300000, 300009}};
  watcher_.Publish(map, 2);
  ASSERT_EQ(watcher_.RunOnce(0), 0);
  EXPECT_TRUE(Allowed(fds.front()));
  EXPECT_EQ(watcher_.held_subid_opens(), 0u);
}

}  // namespace
}  // namespace leash::fswatch

namespace leash::fswatch {
namespace {

// A sink that writes block lines and no allow line (logging.level: block).
class BlocksOnlySink : public RecordingSink {
 public:
  bool Admits(uint32_t /*uid*/, engine::Verdict verdict, bool critical) override {
    return critical || verdict == engine::Verdict::kBlock;
  }
};

class ProcessLineTest : public ::testing::Test {
 protected:
  ProcessLineTest() : watcher_(source_, sink_, Options(&facts_)) {
    watcher_.Publish(StandardMap(), 1);
    sink_.Clear();
  }
  static WatcherOptions Options(const ProcessFacts* facts) {
    WatcherOptions options;
    options.self_pid = kSelf;
    options.process_facts = facts;
    return options;
  }
  int Push(uint64_t mask, pid_t pid, const char* path) {
    return source_.Push(EventOf(mask, pid, kWhite, path));
  }
  void Drain() {
    while (source_.pending() > 0) ASSERT_EQ(watcher_.RunOnce(0), 0);
  }
  void TearDown() override { EXPECT_TRUE(source_.AllReleasedOnce()); }

  FakeFanotifySource source_;
  testing::FakeProcessFacts facts_;
  BlocksOnlySink sink_;
  Watcher watcher_;
};

// Rule L5: a written file or exec line names the acting process (pid, ppid, exe and the command
// line with its secret masked), read after the event was answered.
TEST_F(ProcessLineTest, AWrittenFileOrExecLineNamesTheActingProcessMasked) {
  const std::string token = "ghp_0123456789abcdefABCDEF0123456789wxyz";
  RawProcess cat;
  cat.ppid = 77;
  cat.exe = "/usr/bin/curl";
  cat.cmdline = std::string("curl\0-H\0Authorization: Bearer ", 30) + token + '\0';
  facts_.Set(555, cat);
  bool answered_before_read = false;
  facts_.OnRead([&](pid_t) { answered_before_read = !source_.answers().empty(); });
  Push(FAN_OPEN_PERM, 555, "/t/ok/secret");
  Push(FAN_OPEN_EXEC_PERM, 555, "/t/bin/no");
  Drain();
  EXPECT_TRUE(answered_before_read);
  const auto records = sink_.records();
  ASSERT_EQ(records.size(), 2u);
  for (const auto& record : records) {
    ASSERT_TRUE(record.has_process()) << record.reason();
    EXPECT_EQ(record.process().pid(), 555u);
    EXPECT_EQ(record.process().ppid(), 77u);
    EXPECT_EQ(record.process().exe(), "/usr/bin/curl");
    EXPECT_EQ(record.process().cmdline(), "curl -H Authorization: Bearer ghp_****wxyz");
  }
}

// A process that exited between the event and the read: the line names its pid and nothing
// it could not read, and the decision is made as ever.
TEST_F(ProcessLineTest, AnExitedProcessLeavesItsFactsOut) {
  const int fd = Push(FAN_OPEN_PERM, 556, "/t/ok/secret");
  Drain();
  bool allow = true;
  ASSERT_TRUE(source_.AnswerFor(fd, allow));
  EXPECT_FALSE(allow);
  const auto records = sink_.records();
  ASSERT_EQ(records.size(), 1u);
  ASSERT_TRUE(records[0].has_process());
  EXPECT_EQ(records[0].process().pid(), 556u);
  EXPECT_EQ(records[0].process().ppid(), 0u);
  EXPECT_EQ(records[0].process().exe(), "");
  EXPECT_EQ(records[0].process().cmdline(), "");
}

// A subject flooding denied opens spends only its own budget of process reads: past it, its
// lines name the pid alone, and another subject's line still carries its process.
int64_t FrozenClock() { return 7 * 1000000000LL; }

TEST(ProcessReadBudgetInTheWatcher, AFloodSpendsOnlyItsOwnUidsReads) {
  FakeFanotifySource source;
  testing::FakeProcessFacts facts;
  BlocksOnlySink sink;
  WatcherOptions options;
  options.self_pid = kSelf;
  options.process_facts = &facts;
  options.process_reads_per_uid_per_second = 2;
  options.process_read_clock = &FrozenClock;
  Watcher watcher(source, sink, options);
  watcher.Publish(StandardMap(), 1);
  sink.Clear();
  RawProcess proc;
  proc.exe = "/usr/bin/cat";
  facts.Set(600, proc);
  facts.Set(601, proc);
  auto push = [&](pid_t pid, uint32_t uid, const char* path) {
    source.Push(EventOf(FAN_OPEN_PERM, pid, uid, path));
  };
  for (int i = 0; i < 5; ++i) push(600, kWhite, "/t/ok/secret");
  push(601, kBlack, "/t/no/x");
  while (source.pending() > 0) ASSERT_EQ(watcher.RunOnce(0), 0);
  const auto records = sink.records();
  ASSERT_EQ(records.size(), 6u);
  int with_exe = 0;
  for (size_t i = 0; i < 5; ++i) {
    ASSERT_TRUE(records[i].has_process());
    EXPECT_EQ(records[i].process().pid(), 600u);
    if (!records[i].process().exe().empty()) ++with_exe;
  }
  EXPECT_EQ(with_exe, 2) << "the flooding UID's reads stop at its budget";
  EXPECT_EQ(facts.reads(), 3);
  EXPECT_EQ(records[5].process().exe(), "/usr/bin/cat") << "another UID keeps its own";
  EXPECT_TRUE(source.AllReleasedOnce());
}

// An allow the log does not keep reads nothing of the process: no /proc read on that path.
TEST_F(ProcessLineTest, AnAllowThatIsNotLoggedReadsNoProcess) {
  const int fd = Push(FAN_OPEN_PERM, 557, "/t/ok/a");
  Drain();
  bool allow = false;
  ASSERT_TRUE(source_.AnswerFor(fd, allow));
  EXPECT_TRUE(allow);
  EXPECT_TRUE(sink_.records().empty());
  EXPECT_EQ(facts_.reads(), 0);
}

}  // namespace
}  // namespace leash::fswatch
