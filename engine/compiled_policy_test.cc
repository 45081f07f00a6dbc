#include "engine/compiled_policy.h"

#include <string>
#include <vector>

#include "engine/check_subject.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::engine {
namespace {

using ::testing::HasSubstr;
using leash::v1::Config;

void Fill(leash::v1::EntryList* list, const std::vector<std::string>& entries) {
  for (const std::string& e : entries) list->add_entries(e);
}

// A whitelist policy on every surface, with deny entries carved out of the allowed parts.
Config WhitelistPolicy() {
  Config c;
  c.mutable_network()->set_mode(leash::v1::MODE_WHITELIST);
  Fill(c.mutable_network()->mutable_allow(),
       {"github.com", "*.openai.com", "pypi.org:443", "10.0.0.0/8", "[2001:db8::/32]:443",
        "192.0.2.7"});
  Fill(c.mutable_network()->mutable_deny(), {"gist.github.com", "10.66.0.0/16"});
  c.mutable_filesystem()->set_mode(leash::v1::MODE_WHITELIST);
  Fill(c.mutable_filesystem()->mutable_allow(), {"/home/fido/work", "/srv/**/*.txt", "/tmp"});
  Fill(c.mutable_filesystem()->mutable_deny(), {"/home/fido/work/secrets", "/tmp/*.key"});
  c.mutable_commands()->set_mode(leash::v1::MODE_WHITELIST);
  Fill(c.mutable_commands()->mutable_allow(), {"git", "/usr/bin/python3", "ls"});
  Fill(c.mutable_commands()->mutable_deny(), {"/usr/local/bin/git"});
  c.mutable_tools()->set_mode(leash::v1::MODE_WHITELIST);
  Fill(c.mutable_tools()->mutable_allow(), {"read_file", "search"});
  Fill(c.mutable_tools()->mutable_deny(), {"search"});
  return c;
}

struct DecideCase {
  const char* name;
  Surface surface;
  const char* subject;
  bool allowed;
  const char* reason;
};

class WhitelistDecisions : public ::testing::TestWithParam<DecideCase> {};

TEST_P(WhitelistDecisions, Decide) {
  static const CompiledPolicy policy = CompiledPolicy::Compile(WhitelistPolicy());
  const DecideCase& c = GetParam();
  absl::StatusOr<Decision> decision = DecideText(policy, c.surface, c.subject);
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_EQ(decision->allowed(), c.allowed) << decision->reason;
  EXPECT_THAT(decision->reason, HasSubstr(c.reason));
}

constexpr Surface kNet = leash::v1::SURFACE_NETWORK;
constexpr Surface kFs = leash::v1::SURFACE_FILESYSTEM;
constexpr Surface kCmd = leash::v1::SURFACE_COMMANDS;
constexpr Surface kTool = leash::v1::SURFACE_TOOLS;

INSTANTIATE_TEST_SUITE_P(
    Rules, WhitelistDecisions,
    ::testing::Values(
        // Domains: exact or by suffix on a label boundary.
        DecideCase{"DomainExact", kNet, "github.com:443", true, "matches allow entry 'github.com'"},
        DecideCase{"DomainSuffixMatchesSubdomain", kNet, "api.github.com:443", true,
                   "'github.com'"},
        DecideCase{"DomainSuffixNotMidLabel", kNet, "evilgithub.com:443", false,
                   "network: evilgithub.com:443 not in allow list (whitelist)"},
        DecideCase{"DomainCaseInsensitive", kNet, "API.GitHub.com:443", true, "'github.com'"},
        DecideCase{"DomainTrailingDot", kNet, "github.com.:443", true, "'github.com'"},
        DecideCase{"WildcardMatchesSubdomain", kNet, "api.openai.com:443", true,
                   "'*.openai.com'"},
        DecideCase{"WildcardMatchesDeepSubdomain", kNet, "a.b.openai.com:443", true,
                   "'*.openai.com'"},
        DecideCase{"WildcardNotApex", kNet, "openai.com:443", false, "not in allow list"},
        DecideCase{"PortPinnedAllows", kNet, "pypi.org:443", true, "'pypi.org:443'"},
        DecideCase{"PortPinnedBlocksOtherPort", kNet, "pypi.org:80", false, "not in allow list"},
        DecideCase{"Ipv4Cidr", kNet, "10.1.2.3:22", true, "'10.0.0.0/8'"},
        DecideCase{"Ipv4Host", kNet, "192.0.2.7:80", true, "'192.0.2.7'"},
        DecideCase{"Ipv4OutsideCidr", kNet, "11.0.0.1:22", false, "not in allow list"},
        DecideCase{"Ipv6CidrWithPort", kNet, "[2001:db8::5]:443", true, "'[2001:db8::/32]:443'"},
        DecideCase{"Ipv6CidrWrongPort", kNet, "[2001:db8::5]:80", false, "not in allow list"},
        DecideCase{"Ipv4MappedIpv6MatchesIpv4Entry", kNet, "[::ffff:10.1.2.3]:22", true,
                   "'10.0.0.0/8'"},
        DecideCase{"DenyWinsOverAllowDomain", kNet, "gist.github.com:443", false,
                   "matches deny entry 'gist.github.com'"},
        DecideCase{"DenyWinsOverAllowCidr", kNet, "10.66.1.1:443", false,
                   "matches deny entry '10.66.0.0/16'"},
        // Paths: exact, directory prefix on component boundaries, glob.
        DecideCase{"PathExact", kFs, "/home/fido/work", true, "'/home/fido/work'"},
        DecideCase{"PathUnderPrefix", kFs, "/home/fido/work/a/b.txt", true, "'/home/fido/work'"},
        DecideCase{"PathPrefixOnComponentBoundary", kFs, "/home/fido/workshop/x", false,
                   "not in allow list"},
        DecideCase{"PathGlobDoubleStar", kFs, "/srv/a/b/notes.txt", true, "'/srv/**/*.txt'"},
        DecideCase{"PathGlobNoMatch", kFs, "/srv/a/notes.md", false, "not in allow list"},
        DecideCase{"PathDotDotNormalizedBeforeJudging", kFs, "/home/fido/work/../../../etc/shadow",
                   false, "filesystem: /etc/shadow not in allow list (whitelist)"},
        DecideCase{"PathDenyPrefixWins", kFs, "/home/fido/work/secrets/key", false,
                   "matches deny entry '/home/fido/work/secrets'"},
        DecideCase{"PathDenyGlobWins", kFs, "/tmp/id.key", false, "matches deny entry '/tmp/*.key'"},
        // Commands: basename or absolute path.
        DecideCase{"CommandBasename", kCmd, "/usr/bin/git", true, "matches allow entry 'git'"},
        DecideCase{"CommandBareName", kCmd, "git", true, "'git'"},
        DecideCase{"CommandAbsolutePath", kCmd, "/usr/bin/python3", true, "'/usr/bin/python3'"},
        DecideCase{"CommandAbsolutePathOnlyThatPath", kCmd, "/opt/python3", false,
                   "not in allow list"},
        DecideCase{"CommandDenyPathWins", kCmd, "/usr/local/bin/git", false,
                   "matches deny entry '/usr/local/bin/git'"},
        DecideCase{"CommandNotListed", kCmd, "/usr/bin/curl", false,
                   "commands: /usr/bin/curl not in allow list (whitelist)"},
        // Tools: exact name.
        DecideCase{"ToolExact", kTool, "read_file", true, "'read_file'"},
        DecideCase{"ToolExactOnly", kTool, "read_file2", false, "not in allow list"},
        DecideCase{"ToolDenyWins", kTool, "search", false, "matches deny entry 'search'"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(BlacklistMode, AllowsWhatNoDenyEntryMatches) {
  Config c;
  c.mutable_network()->set_mode(leash::v1::MODE_BLACKLIST);
  Fill(c.mutable_network()->mutable_deny(), {"evil.com"});
  // The allow list is never consulted in blacklist mode.
  Fill(c.mutable_network()->mutable_allow(), {"evil.com"});
  const CompiledPolicy policy = CompiledPolicy::Compile(c);
  Decision allowed = *DecideText(policy, kNet, "example.org:443");
  EXPECT_TRUE(allowed.allowed());
  EXPECT_EQ(allowed.reason, "network: example.org:443 not in deny list (blacklist)");
  Decision blocked = *DecideText(policy, kNet, "api.evil.com:443");
  EXPECT_FALSE(blocked.allowed());
  EXPECT_EQ(blocked.reason, "network: api.evil.com:443 matches deny entry 'evil.com'");
}

// The fanotify loop answers on RuleOnNormalPath and renders the reason after: both must say
// exactly what DecidePath says, on each of the four bases, in both modes.
TEST(RuleOnNormalPath, AgreesWithDecidePathOnVerdictAndReason) {
  Config blacklist;
  blacklist.mutable_filesystem()->set_mode(leash::v1::MODE_BLACKLIST);
  Fill(blacklist.mutable_filesystem()->mutable_deny(), {"/etc/shadow"});
  const CompiledPolicy policies[] = {CompiledPolicy::Compile(WhitelistPolicy()),
                                     CompiledPolicy::Compile(blacklist)};
  const struct {
    int policy;
    const char* path;
    Ruling::Basis basis;
    const char* reason;
  } cases[] = {
      {0, "/home/fido/work/a.txt", Ruling::Basis::kAllowEntry,
       "filesystem: /home/fido/work/a.txt matches allow entry '/home/fido/work'"},
      {0, "/home/fido/work/secrets/k", Ruling::Basis::kDenyEntry,
       "filesystem: /home/fido/work/secrets/k matches deny entry '/home/fido/work/secrets'"},
      {0, "/etc/passwd", Ruling::Basis::kNotAllowed,
       "filesystem: /etc/passwd not in allow list (whitelist)"},
      {1, "/etc/passwd", Ruling::Basis::kNotDenied,
       "filesystem: /etc/passwd not in deny list (blacklist)"},
      {1, "/etc/shadow", Ruling::Basis::kDenyEntry,
       "filesystem: /etc/shadow matches deny entry '/etc/shadow'"},
  };
  for (const auto& c : cases) {
    const CompiledPolicy& policy = policies[c.policy];
    const Ruling ruling = policy.RuleOnNormalPath(c.path);
    const Decision decision = policy.DecidePath(c.path);
    EXPECT_EQ(ruling.basis, c.basis) << c.path;
    EXPECT_EQ(ruling.verdict, decision.verdict) << c.path;
    EXPECT_EQ(ruling.matched_on, decision.matched_on) << c.path;
    std::string reason = "kept: ";  // AppendReason appends
    AppendReason(kFs, c.path, ruling, reason);
    EXPECT_EQ(reason, std::string("kept: ") + c.reason) << c.path;
    EXPECT_EQ(decision.reason, c.reason) << c.path;
  }
}

TEST(DefaultPolicy, EverySurfaceDefaultsToWhitelist) {
  const CompiledPolicy policy = CompiledPolicy::Compile(Config());
  EXPECT_FALSE(DecideText(policy, kNet, "example.org:443")->allowed());
  EXPECT_FALSE(DecideText(policy, kFs, "/etc/passwd")->allowed());
  EXPECT_FALSE(DecideText(policy, kCmd, "/bin/ls")->allowed());
  EXPECT_FALSE(DecideText(policy, kTool, "read_file")->allowed());
  EXPECT_EQ(policy.fail_mode(), FailMode::kClosed);
}

TEST(NetworkDecision, DomainMatchIsReportedSoTheProxyResolvesItself) {
  const CompiledPolicy policy = CompiledPolicy::Compile(WhitelistPolicy());
  NetworkSubject subject;
  subject.domain = "github.com";
  subject.ip = ParseIpAddress("203.0.113.9");  // what the agent connected to
  subject.port = 443;
  Decision decision = policy.DecideNetwork(subject);
  EXPECT_TRUE(decision.allowed());
  EXPECT_EQ(decision.matched_on, MatchedOn::kDomain);
  EXPECT_EQ(decision.reason, "network: github.com:443 (203.0.113.9) matches allow entry 'github.com'");
}

TEST(NetworkDecision, AddressMatchIsPreferred) {
  const CompiledPolicy policy = CompiledPolicy::Compile(WhitelistPolicy());
  NetworkSubject subject;
  subject.domain = "github.com";
  subject.ip = ParseIpAddress("10.0.0.5");
  subject.port = 443;
  EXPECT_EQ(policy.DecideNetwork(subject).matched_on, MatchedOn::kIp);
}

TEST(NetworkDecision, DeniedAddressBlocksAnAllowedName) {
  const CompiledPolicy policy = CompiledPolicy::Compile(WhitelistPolicy());
  NetworkSubject subject;
  subject.domain = "github.com";
  subject.ip = ParseIpAddress("10.66.0.1");
  subject.port = 443;
  EXPECT_FALSE(policy.DecideNetwork(subject).allowed());
}

TEST(NetworkDecision, IpLiteralNameIsJudgedOnTheAddress) {
  const CompiledPolicy policy = CompiledPolicy::Compile(WhitelistPolicy());
  NetworkSubject subject;
  subject.domain = "10.1.1.1";  // e.g. Host: 10.1.1.1
  subject.ip = ParseIpAddress("11.1.1.1");
  subject.port = 80;
  EXPECT_FALSE(policy.DecideNetwork(subject).allowed());
}

TEST(NetworkDecision, InvalidHostNameBlocksEvenInBlacklist) {
  Config c;
  c.mutable_network()->set_mode(leash::v1::MODE_BLACKLIST);
  const CompiledPolicy policy = CompiledPolicy::Compile(c);
  NetworkSubject subject;
  subject.domain = "bad host";
  subject.port = 443;
  Decision decision = policy.DecideNetwork(subject);
  EXPECT_FALSE(decision.allowed());
  EXPECT_THAT(decision.reason, HasSubstr("invalid host name"));
}

TEST(NetworkDecision, NoNameAndNoAddressIsNotAllowedByAWhitelist) {
  const CompiledPolicy policy = CompiledPolicy::Compile(WhitelistPolicy());
  NetworkSubject subject;
  subject.port = 443;
  EXPECT_FALSE(policy.DecideNetwork(subject).allowed());
}

struct DnsCase {
  std::string name;
  bool allowed;
  std::string reason;
};

TEST(DnsNameDecision, WhitelistAnswersOnlyNamesAnAllowEntryCouldReach) {
  Config c = WhitelistPolicy();
  Fill(c.mutable_network()->mutable_deny(), {"exfil.evil.test", "status.github.com:22"});
  const CompiledPolicy policy = CompiledPolicy::Compile(c);
  const std::vector<DnsCase> cases = {
      {"github.com", true, "network: DNS name github.com matches allow entry 'github.com'"},
      {"API.GitHub.com.", true, "matches allow entry 'github.com'"},
      // An entry pinned to a port still lets the name be resolved: a connection on that port
      // could be allowed.
      {"pypi.org", true, "matches allow entry 'pypi.org:443'"},
      {"chat.openai.com", true, "matches allow entry '*.openai.com'"},
      {"openai.com", false, "not in allow list (whitelist)"},
      {"gist.github.com", false, "matches deny entry 'gist.github.com'"},
      // A deny on one port leaves the name reachable on the others.
      {"status.github.com", true, "matches allow entry 'github.com'"},
      {"c2VjcmV0.exfil.evil.test", false, "matches deny entry 'exfil.evil.test'"},
      {"example.org", false, "not in allow list (whitelist)"},
      {"", false, "DNS name . is not a host name"},
      {"bad name.github.com", false, "is not a host name a policy entry could match"},
  };
  for (const DnsCase& test : cases) {
    const Decision decision = policy.DecideDnsName(test.name);
    EXPECT_EQ(decision.allowed(), test.allowed) << test.name << ": " << decision.reason;
    EXPECT_THAT(decision.reason, HasSubstr(test.reason)) << test.name;
  }
}

TEST(DnsNameDecision, BlacklistAnswersEveryNameNotDeniedOnEveryPort) {
  Config c;
  c.mutable_network()->set_mode(leash::v1::MODE_BLACKLIST);
  Fill(c.mutable_network()->mutable_deny(), {"evil.test", "mail.example.org:25"});
  const CompiledPolicy policy = CompiledPolicy::Compile(c);
  EXPECT_TRUE(policy.DecideDnsName("example.org").allowed());
  EXPECT_TRUE(policy.DecideDnsName("mail.example.org").allowed());
  const Decision denied = policy.DecideDnsName("x.evil.test");
  EXPECT_FALSE(denied.allowed());
  EXPECT_EQ(denied.reason, "network: DNS name x.evil.test matches deny entry 'evil.test'");
}

TEST(FailMode, RelativePathIsAFailureToDecide) {
  Config closed;
  closed.mutable_filesystem()->set_mode(leash::v1::MODE_BLACKLIST);
  Decision blocked = CompiledPolicy::Compile(closed).DecidePath("etc/passwd");
  EXPECT_FALSE(blocked.allowed());
  EXPECT_THAT(blocked.reason, HasSubstr("blocked because fail_mode is closed"));

  Config open = closed;
  open.set_fail_mode("open");
  Decision allowed = CompiledPolicy::Compile(open).DecidePath("etc/passwd");
  EXPECT_TRUE(allowed.allowed());
  EXPECT_THAT(allowed.reason, HasSubstr("allowed because fail_mode is open"));
}

TEST(FailMode, TypoIsTreatedAsClosed) {
  Config c;
  c.set_fail_mode("opne");
  EXPECT_EQ(CompiledPolicy::Compile(c).fail_mode(), FailMode::kClosed);
  c.set_fail_mode("open");
  EXPECT_EQ(CompiledPolicy::Compile(c).fail_mode(), FailMode::kOpen);
}

TEST(FailDecision, ClosedBlocksOpenAllows) {
  EXPECT_FALSE(FailDecision(FailMode::kClosed, kNet, "no policy").allowed());
  EXPECT_TRUE(FailDecision(FailMode::kOpen, kNet, "no policy").allowed());
}

TEST(Compile, InertEntriesAreSkippedAndListed) {
  Config c;
  Fill(c.mutable_network()->mutable_allow(), {"https://github.com", "github.com"});
  Fill(c.mutable_filesystem()->mutable_deny(), {"~/secrets"});
  const CompiledPolicy policy = CompiledPolicy::Compile(c);
  ASSERT_EQ(policy.skipped_entries().size(), 2u);
  EXPECT_EQ(policy.skipped_entries()[0].field(), "network.allow");
  EXPECT_EQ(policy.skipped_entries()[0].entry(), "https://github.com");
  EXPECT_EQ(policy.skipped_entries()[1].field(), "filesystem.deny");
  EXPECT_TRUE(DecideText(policy, kNet, "github.com:443")->allowed());
}

TEST(DirectoryOpen, DeniedFolderCannotBeListedInEitherMode) {
  const CompiledPolicy white = CompiledPolicy::Compile(WhitelistPolicy());
  const Decision denied = white.DecideDirectory("/home/fido/work/secrets");
  EXPECT_FALSE(denied.allowed());
  EXPECT_THAT(denied.reason, HasSubstr("deny entry '/home/fido/work/secrets'"));
  Config black;
  black.mutable_filesystem()->set_mode(leash::v1::MODE_BLACKLIST);
  Fill(black.mutable_filesystem()->mutable_deny(), {"/srv/private", "/srv/*/keys"});
  const CompiledPolicy blacklist = CompiledPolicy::Compile(black);
  EXPECT_FALSE(blacklist.DecideDirectory("/srv/private").allowed());
  EXPECT_FALSE(blacklist.DecideDirectory("/srv/x/keys").allowed());
  EXPECT_TRUE(blacklist.DecideDirectory("/srv").allowed());
}

TEST(DirectoryOpen, WhitelistListsAnAllowedFolderAndItsAncestorsOnly) {
  const CompiledPolicy policy = CompiledPolicy::Compile(WhitelistPolicy());
  EXPECT_TRUE(policy.DecideDirectory("/home/fido/work").allowed());
  EXPECT_TRUE(policy.DecideDirectory("/home/fido/work/sub").allowed());
  for (const char* ancestor : {"/", "/home", "/home/fido", "/srv"}) {
    const Decision decision = policy.DecideDirectory(ancestor);
    EXPECT_TRUE(decision.allowed()) << ancestor;
    EXPECT_THAT(decision.reason, HasSubstr("listed by name only")) << ancestor;
  }
  // A sibling of an allowed folder, or a folder beside an ancestor, is not on the way.
  for (const char* other : {"/home/other", "/home/fido/workshop", "/etc", "/srv2"}) {
    EXPECT_FALSE(policy.DecideDirectory(other).allowed()) << other;
  }
  // Being an ancestor allows the listing only: a file in it is judged as a file.
  EXPECT_FALSE(policy.DecidePath("/home/fido/notes.txt").allowed());
}

TEST(DirectoryOpen, AncestorRuleDoesNotOutrankADenyEntry) {
  Config c = WhitelistPolicy();
  Fill(c.mutable_filesystem()->mutable_deny(), {"/home"});
  EXPECT_FALSE(CompiledPolicy::Compile(c).DecideDirectory("/home/fido").allowed());
}

constexpr ProgramOrigin kRoot = ProgramOrigin::kRootControlled;
constexpr ProgramOrigin kOther = ProgramOrigin::kOther;

TEST(CommandNameEntry, MatchesOnlyARootControlledProgram) {
  const CompiledPolicy policy = CompiledPolicy::Compile(WhitelistPolicy());
  EXPECT_TRUE(policy.DecideCommand("/usr/bin/git", kRoot).allowed());
  // curl copied by the agent to a file named git in its own folder.
  const Decision copy = policy.DecideCommand("/home/fido/bin/git", kOther);
  EXPECT_FALSE(copy.allowed());
  EXPECT_THAT(copy.reason, HasSubstr("matches allow entry 'git' by name only"));
  EXPECT_THAT(copy.reason, HasSubstr("owned by root"));
}

TEST(CommandAbsoluteEntry, MatchesAsWrittenWhoeverMadeIt) {
  const CompiledPolicy policy = CompiledPolicy::Compile(WhitelistPolicy());
  EXPECT_TRUE(policy.DecideCommand("/usr/bin/python3", kOther).allowed());
}

TEST(CommandDenyByName, CatchesCopiesWhoeverMadeThem) {
  Config c;
  c.mutable_commands()->set_mode(leash::v1::MODE_BLACKLIST);
  Fill(c.mutable_commands()->mutable_deny(), {"ssh"});
  const CompiledPolicy policy = CompiledPolicy::Compile(c);
  EXPECT_FALSE(policy.DecideCommand("/home/fido/ssh", kOther).allowed());
  EXPECT_FALSE(policy.DecideCommand("/usr/bin/ssh", kRoot).allowed());
  EXPECT_TRUE(policy.DecideCommand("/home/fido/tool", kOther).allowed());
}

TEST(CommandNameEntry, MatchesTheTargetOfASameNamedLink) {
  Config c;
  c.mutable_commands()->set_mode(leash::v1::MODE_WHITELIST);
  Fill(c.mutable_commands()->mutable_allow(), {"python3"});
  Fill(c.mutable_commands()->mutable_deny(), {"editor"});
  const CompiledPolicy without = CompiledPolicy::Compile(c);
  EXPECT_FALSE(without.DecideCommand("/usr/bin/python3.11", kRoot).allowed());
  const CompiledPolicy policy = CompiledPolicy::Compile(
      c, {{"python3", "/usr/bin/python3.11"}, {"editor", "/usr/bin/vim.basic"}});
  const Decision allowed = policy.DecideCommand("/usr/bin/python3.11", kRoot);
  EXPECT_TRUE(allowed.allowed()) << allowed.reason;
  EXPECT_THAT(allowed.reason, HasSubstr("allow entry 'python3'"));
  // Still a name entry: a target that is no longer root-controlled does not match.
  EXPECT_FALSE(policy.DecideCommand("/usr/bin/python3.11", kOther).allowed());
  // A deny by name reaches its link's target too.
  EXPECT_FALSE(policy.DecideCommand("/usr/bin/vim.basic", kRoot).allowed());
  // A link for a name the policy does not list adds nothing.
  EXPECT_FALSE(CompiledPolicy::Compile(c, {{"perl", "/usr/bin/perl5.36"}})
                   .DecideCommand("/usr/bin/perl5.36", kRoot)
                   .allowed());
}

TEST(CheckSubject, NetworkNeedsAPort) {
  absl::StatusOr<NetworkSubject> subject = ParseNetworkCheckSubject("github.com");
  ASSERT_FALSE(subject.ok());
  EXPECT_THAT(std::string(subject.status().message()), HasSubstr("github.com:443"));
  EXPECT_FALSE(ParseNetworkCheckSubject("2001:db8::1:443").ok());
  EXPECT_TRUE(ParseNetworkCheckSubject("[2001:db8::1]:443").ok());
}

TEST(CheckSubject, FilesystemNeedsAnAbsolutePath) {
  const CompiledPolicy policy = CompiledPolicy::Compile(Config());
  EXPECT_EQ(DecideText(policy, kFs, "etc").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace leash::engine
