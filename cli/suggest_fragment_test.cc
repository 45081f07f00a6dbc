// The fragment and the consent lines, from log lines to text: what is suggested, what is only
// listed, and that the fragment allows every thing seen and not the things next to them.
#include "cli/suggest_fragment.h"

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "cli/suggest_consent.h"
#include "cli/testing/fake_path_facts.h"
#include "engine/check_subject.h"
#include "engine/compiled_policy.h"
#include "engine/config_defaults.h"
#include "engine/config_yaml.h"
#include "engine/tiers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::cli {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr uint32_t kUid = 2001;

std::string Line(uint32_t uid, absl::string_view ts, absl::string_view ref,
                 absl::string_view surface, absl::string_view action,
                 absl::string_view subject, absl::string_view extra = "") {
  return absl::StrCat(R"({"ts":")", ts, R"(","ref":")", ref, R"(","uid":)", uid,
                      R"(,"surface":")", surface, R"(","action":")", action,
                      R"(","reason":"why )", ref, R"(","subject":{)", subject, "}", extra, "}");
}

Observations Observe(const std::vector<std::string>& lines, ObservationFilter filter = {}) {
  if (filter.uids.empty()) filter.uids = {{kUid, kUid}, {100000, 165535}};
  Observations observations(filter);
  for (const std::string& line : lines) observations.AddLine(line);
  return observations;
}

// The host the workload ran on: git and the work tree are root's.
const testing::FakePathFacts& Facts() {
  static const testing::FakePathFacts* facts = [] {
    auto* f = new testing::FakePathFacts();
    f->RootProgram("/usr/bin/git").RootProgram("/usr/bin/curl").Put(
        "/home/iris/work", testing::FakePathFacts::Dir(0, 0755));
    return f;
  }();
  return *facts;
}

constexpr char kT[] = "2026-12-02T06:00:00.000000Z";

std::vector<std::string> Workload() {
  return {
      Line(kUid, kT, "r1", "network", "allow", R"("domain":"api.github.com","port":443)"),
      Line(kUid, kT, "r2", "network", "allow", R"("domain":"uploads.github.com","port":443)"),
      Line(kUid, kT, "r3", "network", "allow", R"("domain":"api.github.com","port":443)"),
      Line(kUid, kT, "r4", "network", "allow", R"("ip":"192.0.2.7","port":8080)"),
      Line(kUid, kT, "r5", "network", "block", R"("domain":"evil.example","port":443)"),
      Line(kUid, kT, "r6", "network", "outcome", R"("domain":"api.github.com","port":443)"),
      Line(100005, kT, "r7", "filesystem", "allow", R"("path":"/home/iris/work/a.py")"),
      Line(kUid, kT, "r8", "filesystem", "allow", R"("path":"/home/iris/work/b.py")"),
      Line(kUid, kT, "r9", "filesystem", "allow", R"("path":"/home/iris/work/c.py")"),
      Line(kUid, kT, "r10", "filesystem", "allow", R"("path":"/etc/hosts")"),
      Line(kUid, kT, "r11", "filesystem", "allow", R"("path":"/etc")"),
      Line(kUid, kT, "r12", "commands", "allow", R"("binary":"/usr/bin/git")"),
      Line(kUid, kT, "r13", "commands", "block", R"("binary":"/usr/bin/curl")"),
      Line(kUid, kT, "r14", "tools", "block", R"("name":"search")", R"(,"enforced":false)"),
      Line(kUid, kT, "r15", "tools", "allow", R"("name":"read file")"),
      Line(3000, kT, "r16", "commands", "allow", R"("binary":"/usr/bin/other")"),
      R"({"ts":"2026-12-02T06:00:01.000000Z","ref":"r17","uid":2001,"action":"suppressed",)"
      R"("reason":"decision log: 42 allow lines of uid 2001 not written between a and b"})",
      R"({"ts":"2026-12-02T06:00:01.000000Z","ref":"r18","uid":2001,"surf)",  // torn
  };
}

TEST(Observations, KeepsTheSubjectsDecisionsApart) {
  const Observations seen = Observe(Workload());
  EXPECT_EQ(seen.counts().lines, 18u);
  EXPECT_EQ(seen.counts().unreadable, 1u);
  EXPECT_EQ(seen.counts().suppressed_allows, 42u);
  EXPECT_EQ(seen.counts().audited, 1u);
  EXPECT_EQ(seen.needed(leash::v1::SURFACE_NETWORK).at("api.github.com:443").count, 2u);
  EXPECT_EQ(seen.needed(leash::v1::SURFACE_NETWORK).count("evil.example:443"), 0u);
  EXPECT_EQ(seen.refused(leash::v1::SURFACE_NETWORK).at("evil.example:443").reason, "why r5");
  // A subordinate UID is the agent; another account's line is not.
  EXPECT_EQ(seen.needed(leash::v1::SURFACE_FILESYSTEM).count("/home/iris/work/a.py"), 1u);
  EXPECT_EQ(seen.needed(leash::v1::SURFACE_COMMANDS).count("/usr/bin/other"), 0u);
  EXPECT_EQ(seen.needed(leash::v1::SURFACE_TOOLS).at("search").audited, 1u);
}

TEST(Observations, WindowAndSurfaceFilters) {
  ObservationFilter filter;
  filter.surfaces = {leash::v1::SURFACE_COMMANDS};
  filter.since = absl::FromCivil(absl::CivilSecond(2026, 12, 2, 5, 0, 0), absl::UTCTimeZone());
  filter.until = absl::FromCivil(absl::CivilSecond(2026, 12, 2, 7, 0, 0), absl::UTCTimeZone());
  const Observations seen = Observe(
      {Line(kUid, "2026-12-02T04:59:59.999999Z", "early", "commands", "allow",
            R"("binary":"/usr/bin/early")"),
       Line(kUid, "2026-12-02T05:00:00.000000Z", "in", "commands", "allow",
            R"("binary":"/usr/bin/in")"),
       Line(kUid, "2026-12-02T06:30:00Z", "other-form", "commands", "allow",
            R"("binary":"/usr/bin/rfc3339")"),
       Line(kUid, "2026-12-02T07:00:00.000000Z", "late", "commands", "allow",
            R"("binary":"/usr/bin/late")"),
       Line(kUid, kT, "net", "network", "allow", R"("domain":"a.example","port":443)")},
      filter);
  std::vector<std::string> keys;
  for (const auto& [key, s] : seen.needed(leash::v1::SURFACE_COMMANDS)) keys.push_back(key);
  EXPECT_THAT(keys, ElementsAre("/usr/bin/in", "/usr/bin/rfc3339"));
  EXPECT_TRUE(seen.needed(leash::v1::SURFACE_NETWORK).empty());
}

TEST(BuildFragment, AllowsWhatWasSeenAndNotWhatWasNot) {
  absl::StatusOr<Fragment> fragment = BuildFragment(Observe(Workload()), Facts(), {}, "profile:p");
  ASSERT_TRUE(fragment.ok()) << fragment.status();
  const leash::v1::Config& config = fragment->config;
  EXPECT_THAT(config.network().allow().entries(),
              ElementsAre("192.0.2.7/32:8080", "api.github.com:443", "uploads.github.com:443"));
  EXPECT_THAT(config.filesystem().allow().entries(), ElementsAre("/etc/hosts", "/home/iris/work"));
  EXPECT_THAT(config.commands().allow().entries(), ElementsAre("/usr/bin/git"));
  EXPECT_THAT(config.tools().allow().entries(), ElementsAre("search"));
  EXPECT_EQ(config.network().mode(), leash::v1::MODE_WHITELIST);
  EXPECT_EQ(fragment->entries, 7u);

  // The text is a profile the loader reads as that same fragment, annotated.
  absl::StatusOr<leash::v1::Config> read =
      engine::ParseConfigYaml(fragment->yaml, engine::ConfigKind::kProfile, "t");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_THAT(fragment->yaml,
              HasSubstr(R"(- "api.github.com:443"  # 2 times, e.g. ref r1)"));
  EXPECT_THAT(fragment->yaml, HasSubstr(R"(- "search"  # 1 time, e.g. ref r14; 1 would-be block under audit)"));
  EXPECT_THAT(fragment->notes,
              Contains("refused, not suggested: network 'evil.example:443' (1 time, e.g. ref "
                       "r5): why r5"));
  EXPECT_THAT(fragment->notes,
              Contains("refused, not suggested: commands '/usr/bin/curl' (1 time, e.g. ref "
                       "r13): why r13"));
  EXPECT_THAT(fragment->notes, Contains(HasSubstr("not suggested: filesystem '/etc' (1 time")));
  EXPECT_THAT(fragment->notes,
              Contains(HasSubstr("not suggested: tools.allow 'read file' can never match")));

  const engine::CompiledPolicy policy =
      engine::CompiledPolicy::Compile(engine::WithDefaults(config));
  const auto allowed = [&](leash::v1::Surface surface, absl::string_view what) {
    absl::StatusOr<engine::Decision> decision = engine::DecideText(policy, surface, what);
    EXPECT_TRUE(decision.ok()) << what << ": " << decision.status();
    return decision.ok() && decision->allowed();
  };
  for (const char* seen : {"api.github.com:443", "uploads.github.com:443", "192.0.2.7:8080"}) {
    EXPECT_TRUE(allowed(leash::v1::SURFACE_NETWORK, seen)) << seen;
  }
  for (const char* unseen : {"github.com:443", "api.github.com:80", "evil.example:443",
                             "192.0.2.8:8080", "192.0.2.7:443"}) {
    EXPECT_FALSE(allowed(leash::v1::SURFACE_NETWORK, unseen)) << unseen;
  }
  EXPECT_TRUE(allowed(leash::v1::SURFACE_FILESYSTEM, "/home/iris/work/a.py"));
  EXPECT_FALSE(allowed(leash::v1::SURFACE_FILESYSTEM, "/etc/passwd"));
  EXPECT_FALSE(allowed(leash::v1::SURFACE_FILESYSTEM, "/home/iris/.ssh/id_ed25519"));
  EXPECT_TRUE(allowed(leash::v1::SURFACE_COMMANDS, "/usr/bin/git"));
  EXPECT_FALSE(allowed(leash::v1::SURFACE_COMMANDS, "/usr/bin/curl"));
  EXPECT_TRUE(allowed(leash::v1::SURFACE_TOOLS, "search"));
  EXPECT_FALSE(allowed(leash::v1::SURFACE_TOOLS, "shell"));
}

TEST(BuildFragment, OnlyTheChosenSurfacesAndNothingForAnEmptyOne) {
  absl::StatusOr<Fragment> fragment = BuildFragment(
      Observe(Workload(), {}), Facts(), {leash::v1::SURFACE_COMMANDS}, "profile:p");
  ASSERT_TRUE(fragment.ok());
  EXPECT_FALSE(fragment->config.has_network());
  EXPECT_THAT(fragment->config.commands().allow().entries(), ElementsAre("/usr/bin/git"));
  EXPECT_THAT(fragment->notes, Not(Contains(HasSubstr("evil.example"))));

  fragment = BuildFragment(Observe({}), Facts(), {}, "profile:p");
  ASSERT_TRUE(fragment.ok());
  EXPECT_EQ(fragment->entries, 0u);
  EXPECT_EQ(fragment->yaml, "{}\n");
  EXPECT_THAT(fragment->notes, Contains(HasSubstr("network: nothing allowed was seen")));
}

TEST(CommentText, ANewlineCannotEndTheComment) {
  EXPECT_EQ(CommentText("a\nnetwork: { mode: blacklist }\x01"),
            "a\\x0anetwork: { mode: blacklist }\\x01");
  EXPECT_EQ(CommentText("plain 'text' \\ é"), "plain 'text' \\ é");
}

TEST(BuildFragment, ANameWithANewlineIsNotSuggestedAndItsCommentsStayComments) {
  const Observations seen = Observe({
      Line(kUid, kT, "n1", "filesystem", "allow", R"("path":"/srv/p/x\nfilesystem: []")"),
      Line(kUid, kT, "n2", "filesystem", "allow", R"("path":"/srv/p/y")"),
      Line(kUid, kT, "n3", "commands", "allow", R"("binary":"/srv/bin/\nb")"),
  });
  absl::StatusOr<Fragment> fragment = BuildFragment(seen, Facts(), {}, "profile:p");
  ASSERT_TRUE(fragment.ok()) << fragment.status();
  EXPECT_THAT(fragment->config.filesystem().allow().entries(), ElementsAre("/srv/p/y"));
  EXPECT_FALSE(fragment->config.has_commands());
  EXPECT_THAT(fragment->notes, Contains(HasSubstr("control character")));
}

// A line as the fanotify watcher and the proxy write it, with its own reason.
std::string LineWithReason(absl::string_view ref, absl::string_view surface,
                           absl::string_view action, absl::string_view reason,
                           absl::string_view subject, absl::string_view extra = "") {
  return absl::StrCat(R"({"ts":")", kT, R"(","ref":")", ref, R"(","uid":)", kUid,
                      R"(,"surface":")", surface, R"(","action":")", action, R"(","reason":")",
                      reason, R"(","subject":{)", subject, "}", extra, "}");
}

// What the agent chooses (a Host header, a directory to list) or what the kernel does for it
// (load a program's interpreter) is not something it did that an entry should allow: each
// would widen the profile past what was seen.
TEST(BuildFragment, NothingBroaderThanWhatWasSeen) {
  const std::string listing(engine::kDirectoryListing);
  const Observations seen = Observe({
      // A Host header of "*.com" or "com", allowed (blacklist) or a would-be block (audit).
      LineWithReason("w1", "network", "allow", "network: *.com:80 not in deny list (blacklist)",
                     R"("domain":"*.com","ip":"192.0.2.9","port":80)"),
      LineWithReason("w2", "network", "block", "network: com:443 not in allow list (whitelist)",
                     R"("domain":"com","ip":"192.0.2.9","port":443)", R"(,"enforced":false)"),
      LineWithReason("w3", "network", "allow", "network: co.uk:443 not in deny list (blacklist)",
                     R"("domain":"co.uk","port":443)"),
      LineWithReason("w4", "network", "allow", "network: api.example.com:443 not in deny list",
                     R"("domain":"api.example.com","port":443)"),
      // The ELF interpreter of an allowed program.
      LineWithReason("i1", "commands", "allow",
                     absl::StrCat("commands: /lib64/ld-linux-x86-64.so.2",
                                  engine::kElfInterpreterOf,
                                  "/usr/bin/git, which was allowed; the kernel loads it as part "
                                  "of that exec"),
                     R"("binary":"/lib64/ld-linux-x86-64.so.2")"),
      LineWithReason("i2", "commands", "allow", "commands: /usr/bin/git not in deny list",
                     R"("binary":"/usr/bin/git")"),
      // Directories listed: the way to an allowed folder, another account's home (audit), and
      // a folder whose file was read too.
      LineWithReason("d1", "filesystem", "allow",
                     absl::StrCat("filesystem: /home/iris is a directory above allow entry "
                                  "'/home/iris/work' (listed by name only)", listing),
                     R"("path":"/home/iris")"),
      LineWithReason("d2", "filesystem", "block",
                     absl::StrCat("filesystem: /home/other not in allow list (whitelist)",
                                  listing),
                     R"("path":"/home/other")", R"(,"enforced":false)"),
      LineWithReason("d3", "filesystem", "allow",
                     absl::StrCat("filesystem: /home/iris/work not in deny list", listing),
                     R"("path":"/home/iris/work")"),
      LineWithReason("f1", "filesystem", "allow", "filesystem: /home/iris/work/a.py not in deny",
                     R"("path":"/home/iris/work/a.py")"),
  });
  absl::StatusOr<Fragment> fragment = BuildFragment(seen, Facts(), {}, "profile:p");
  ASSERT_TRUE(fragment.ok()) << fragment.status();
  const leash::v1::Config& config = fragment->config;
  EXPECT_THAT(config.network().allow().entries(), ElementsAre("api.example.com:443"));
  EXPECT_THAT(config.commands().allow().entries(), ElementsAre("/usr/bin/git"));
  EXPECT_THAT(config.filesystem().allow().entries(), ElementsAre("/home/iris/work/a.py"));
  EXPECT_THAT(fragment->notes, Contains(HasSubstr("not suggested: network '*.com:80'")));
  EXPECT_THAT(fragment->notes, Contains(HasSubstr("not suggested: network 'com:443'")));
  EXPECT_THAT(fragment->notes, Contains(HasSubstr("not suggested: network 'co.uk:443'")));
  EXPECT_THAT(fragment->notes, Contains(HasSubstr("not suggested: filesystem '/home/other'")));
  // The way to what is allowed stays listable under the whitelist; nothing to say about it.
  EXPECT_THAT(fragment->notes, Not(Contains(HasSubstr("'/home/iris'"))));

  const engine::CompiledPolicy policy =
      engine::CompiledPolicy::Compile(engine::WithDefaults(config));
  EXPECT_TRUE(policy.DecideDirectory("/home/iris").allowed());
  EXPECT_TRUE(policy.DecideDirectory("/home/iris/work").allowed());
  EXPECT_FALSE(policy.DecidePath("/home/iris/.ssh/id_ed25519").allowed());
  EXPECT_FALSE(policy.DecideDirectory("/home/other").allowed());
  EXPECT_FALSE(policy.DecideCommand("/lib64/ld-linux-x86-64.so.2").allowed());
  engine::NetworkSubject other;
  other.domain = "evil.com";
  other.port = 80;
  EXPECT_FALSE(policy.DecideNetwork(other).allowed());
}

HostPolicy Host(const std::string& bindings_yaml = "") {
  HostPolicy host;
  absl::StatusOr<leash::v1::Config> floor = engine::ParseConfigYaml(
      "user: lcli-user\n"
      "network: { mode: whitelist, allow: [\"floor.example\"] }\n"
      "filesystem: { mode: blacklist, deny: [\"/home/iris/.ssh\"] }\n"
      "commands: { mode: whitelist, allow: [\"/usr/bin/git\"] }\n"
      "tools: { mode: whitelist, allow: [\"read_file\"] }\n",
      engine::ConfigKind::kFloor, "floor");
  EXPECT_TRUE(floor.ok()) << floor.status();
  host.floor = *floor;
  if (!bindings_yaml.empty()) {
    host.profiles.emplace("shared", leash::v1::Config());
  }
  return host;
}

TEST(SaveAndBindLines, TheBindCarriesTheEnginesAcks) {
  absl::StatusOr<Fragment> fragment = BuildFragment(Observe(Workload()), Facts(), {}, "profile:p");
  ASSERT_TRUE(fragment.ok());
  const ConsentLines lines =
      SaveAndBindLines(Host(), "leash-iris", "leash-iris-observed", fragment->config,
                       "leash-iris-observed.yaml");
  EXPECT_THAT(lines.commands,
              ElementsAre("sudo leash profile save leash-iris-observed --from "
                          "leash-iris-observed.yaml",
                          "sudo leash bind agent:leash-iris leash-iris-observed "
                          "--ack 'network.allow:192.0.2.7/32:8080' "
                          "--ack 'network.allow:api.github.com:443' "
                          "--ack 'network.allow:uploads.github.com:443' "
                          "--ack 'tools.allow:search'"));
}

TEST(SaveAndBindLines, AProfileBoundElsewhereNeedsThoseAgentsConsentAndSaysSo) {
  HostPolicy host = Host();
  host.profiles.emplace("shared", leash::v1::Config());
  host.bindings.Put({"agent:leash-vader", "shared", {}});
  absl::StatusOr<Fragment> fragment = BuildFragment(
      Observe(Workload()), Facts(), {leash::v1::SURFACE_TOOLS}, "profile:shared");
  ASSERT_TRUE(fragment.ok());
  const ConsentLines lines =
      SaveAndBindLines(host, "leash-iris", "shared", fragment->config, "shared.yaml");
  EXPECT_THAT(lines.commands,
              ElementsAre("sudo leash profile save shared --from shared.yaml "
                          "--ack 'agent:leash-vader=tools.allow:search'",
                          "sudo leash bind agent:leash-iris shared --ack 'tools.allow:search'"));
  EXPECT_THAT(lines.notes, Contains(HasSubstr("already bound to agent:leash-vader")));
}

TEST(SaveAndBindLines, AlreadyBoundNeedsOnlyTheSave) {
  HostPolicy host = Host();
  host.profiles.emplace("mine", leash::v1::Config());
  host.bindings.Put({"agent:leash-iris", "mine", {}});
  absl::StatusOr<Fragment> fragment = BuildFragment(
      Observe(Workload()), Facts(), {leash::v1::SURFACE_COMMANDS}, "profile:mine");
  ASSERT_TRUE(fragment.ok());
  const ConsentLines lines =
      SaveAndBindLines(host, "leash-iris", "mine", fragment->config, "mine.yaml");
  // /usr/bin/git is on the floor's list already: nothing to consent to.
  EXPECT_THAT(lines.commands, ElementsAre("sudo leash profile save mine --from mine.yaml"));
  EXPECT_THAT(lines.notes, Contains(HasSubstr("is bound to 'mine' already")));
}

// The configured user resolves to the floor and leash bind refuses agent:<it>: no line is
// printed that leashd would refuse, and the note says where its entries go instead.
TEST(SaveAndBindLines, TheConfiguredUserGetsNoBindLineButTheFloorsWay) {
  absl::StatusOr<Fragment> fragment = BuildFragment(Observe(Workload()), Facts(), {}, "profile:p");
  ASSERT_TRUE(fragment.ok());
  const ConsentLines lines = SaveAndBindLines(Host(), "lcli-user", "lcli-user-observed",
                                              fragment->config, "lcli-user-observed.yaml");
  EXPECT_THAT(lines.commands, IsEmpty());
  EXPECT_THAT(lines.notes, ElementsAre(HasSubstr("lcli-user is the configured user")));
  EXPECT_THAT(lines.notes, ElementsAre(HasSubstr("leash <surface> allow <entry>")));
}

// A profile inherits the audit key it does not write: over a floor that audits, a fragment of
// allow lists alone would be bound and still block nothing. So each audited surface it writes
// turns audit off, and one it leaves out is said.
TEST(BuildFragment, TurnsOffTheAuditTheFloorWouldLendIt) {
  HostPolicy host = Host();
  host.floor.mutable_network()->set_audit(true);
  host.floor.mutable_filesystem()->set_audit(true);
  host.floor.mutable_tools()->set_audit(true);
  const std::set<leash::v1::Surface> audited = AuditedBeneath(host);
  EXPECT_THAT(audited, ElementsAre(leash::v1::SURFACE_NETWORK, leash::v1::SURFACE_FILESYSTEM,
                                   leash::v1::SURFACE_TOOLS));
  absl::StatusOr<Fragment> fragment = BuildFragment(
      Observe(Workload()), Facts(),
      {leash::v1::SURFACE_NETWORK, leash::v1::SURFACE_COMMANDS, leash::v1::SURFACE_TOOLS},
      "profile:p", audited);
  ASSERT_TRUE(fragment.ok()) << fragment.status();
  EXPECT_THAT(fragment->yaml, HasSubstr("audit: false  # the floor audits network"));
  EXPECT_THAT(fragment->yaml, HasSubstr("audit: false  # the floor audits tools"));
  EXPECT_FALSE(fragment->config.commands().has_audit());  // the floor does not audit it
  EXPECT_FALSE(fragment->config.has_filesystem());
  EXPECT_THAT(fragment->notes,
              Contains(HasSubstr("filesystem: the floor audits it and this fragment leaves it")));

  // Bound, what it did not allow is blocked, not only logged.
  const leash::v1::Config bound =
      engine::WithDefaults(engine::Overlay(host.floor, fragment->config));
  EXPECT_FALSE(bound.network().audit());
  EXPECT_FALSE(bound.tools().audit());
  EXPECT_TRUE(bound.filesystem().audit());
  // Turning audit off is no loosening: the bind asks only for the new entries.
  const ConsentLines lines =
      SaveAndBindLines(host, "leash-iris", "p", fragment->config, "p.yaml");
  ASSERT_EQ(lines.commands.size(), 2u);
  EXPECT_THAT(lines.commands[1], Not(HasSubstr("audit")));

  // Under a floor that audits nothing the fragment says nothing of audit.
  fragment = BuildFragment(Observe(Workload()), Facts(), {}, "profile:p", AuditedBeneath(Host()));
  ASSERT_TRUE(fragment.ok());
  EXPECT_THAT(fragment->yaml, Not(HasSubstr("audit:")));
}

}  // namespace
}  // namespace leash::cli
