#include "engine/validate.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::engine {
namespace {

using ::testing::HasSubstr;
using leash::v1::Config;
using leash::v1::Finding;

const Finding* FindField(const std::vector<Finding>& findings, absl::string_view field) {
  for (const Finding& f : findings) {
    if (f.field() == field) return &f;
  }
  return nullptr;
}

TEST(Validate, BlacklistSurfaceWithAllowListIsAnError) {
  Config c;
  c.mutable_network()->set_mode(leash::v1::MODE_BLACKLIST);
  c.mutable_network()->mutable_allow()->add_entries("github.com");
  std::vector<Finding> findings = ValidateConfig(c, "floor");
  const Finding* f = FindField(findings, "network.allow");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity(), leash::v1::SEVERITY_ERROR);
  EXPECT_THAT(f->message(), HasSubstr("never consulted"));
  EXPECT_EQ(f->source(), "floor");
  EXPECT_TRUE(HasBlockingFinding(findings));
}

TEST(Validate, InertDenyIsCritical) {
  Config c;
  c.mutable_filesystem()->mutable_deny()->add_entries("~/.ssh");
  std::vector<Finding> findings = ValidateConfig(c, "floor");
  const Finding* f = FindField(findings, "filesystem.deny");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity(), leash::v1::SEVERITY_CRITICAL);
  EXPECT_THAT(f->message(), HasSubstr("blocks nothing"));
  EXPECT_TRUE(HasBlockingFinding(findings));
}

TEST(Validate, InertAllowIsAWarningOnly) {
  Config c;
  c.mutable_network()->mutable_allow()->add_entries("https://github.com");
  std::vector<Finding> findings = ValidateConfig(c, "floor");
  const Finding* f = FindField(findings, "network.allow");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity(), leash::v1::SEVERITY_WARNING);
  EXPECT_FALSE(HasBlockingFinding(findings));
}

TEST(Validate, InertResolverIsAWarningBecauseItFailsClosed) {
  Config c;
  c.mutable_network()->mutable_dns_resolvers()->add_entries("dns.example");
  std::vector<Finding> findings = ValidateConfig(c, "floor");
  const Finding* f = FindField(findings, "network.dns_resolvers");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity(), leash::v1::SEVERITY_WARNING);
}

TEST(Validate, CommandsBlacklistWarnsAboutRenamedBinaries) {
  Config c;
  c.mutable_commands()->set_mode(leash::v1::MODE_BLACKLIST);
  c.mutable_commands()->mutable_deny()->add_entries("ssh");
  std::vector<Finding> findings = ValidateConfig(c, "floor");
  const Finding* f = FindField(findings, "commands.mode");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity(), leash::v1::SEVERITY_WARNING);
  EXPECT_THAT(f->message(), HasSubstr("renamed binary"));
  // And what a whitelist's name entry would match instead.
  EXPECT_THAT(f->message(), HasSubstr("a name entry (git) allows only a program owned by root and "
                                      "writable by nobody else, in a folder only root can write"));
  EXPECT_FALSE(HasBlockingFinding(findings));
}

TEST(Validate, ANameAllowEntrySaysItMatchesOnlyARootControlledProgram) {
  Config c;
  c.mutable_commands()->set_mode(leash::v1::MODE_WHITELIST);
  c.mutable_commands()->mutable_allow()->add_entries("git");
  c.mutable_commands()->mutable_allow()->add_entries("/opt/tool/bin/tool");
  std::vector<Finding> findings = ValidateConfig(c, "floor");
  const Finding* f = FindField(findings, "commands.allow");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->entry(), "git");
  EXPECT_THAT(f->message(), HasSubstr("owned by root and writable by nobody else"));
  EXPECT_THAT(f->message(), HasSubstr("a copy, a rename or a download"));
  EXPECT_THAT(f->message(), HasSubstr("an absolute entry matches as written"));
  EXPECT_FALSE(HasBlockingFinding(findings));
}

TEST(Validate, FailModeTypoWarnsTreatedAsClosed) {
  Config c;
  c.set_fail_mode("opne");
  std::vector<Finding> findings = ValidateConfig(c, "floor");
  const Finding* f = FindField(findings, "fail_mode");
  ASSERT_NE(f, nullptr);
  EXPECT_THAT(f->message(), HasSubstr("treated as closed"));
}

// A surface in audit blocks nothing: each one is a warning of its own (it does not fail
// validate, since audit is a deliberate, acknowledged state).
TEST(Validate, EveryAuditedSurfaceIsAWarning) {
  Config c;
  c.mutable_network()->set_audit(true);
  c.mutable_filesystem()->set_audit(false);
  c.mutable_commands()->set_audit(true);
  c.mutable_tools()->set_audit(true);
  std::vector<Finding> findings = ValidateConfig(c, "profile:observe");
  for (const char* field : {"network.audit", "commands.audit", "tools.audit"}) {
    const Finding* f = FindField(findings, field);
    ASSERT_NE(f, nullptr) << field;
    EXPECT_EQ(f->severity(), leash::v1::SEVERITY_WARNING);
    EXPECT_EQ(f->source(), "profile:observe");
    EXPECT_THAT(f->message(), HasSubstr("is in audit: what its policy would block is only logged"));
  }
  EXPECT_EQ(FindField(findings, "filesystem.audit"), nullptr);
  EXPECT_FALSE(HasBlockingFinding(findings));
}

TEST(Validate, CleanPolicyHasNoFindings) {
  Config c;
  c.mutable_network()->set_mode(leash::v1::MODE_WHITELIST);
  c.mutable_network()->mutable_allow()->add_entries("github.com");
  EXPECT_TRUE(ValidateConfig(c, "floor").empty());
}

// "Writes and validate disagree": a floor leashd will not start on is a validate error.
TEST(ValidateStart, WritesAndValidateAgree_AFloorWithoutAUserIsAnError) {
  StartFacts facts;
  facts.user_exists = [](absl::string_view) -> absl::StatusOr<bool> { return true; };
  std::vector<Finding> findings = ValidateStart(Config(), "/etc/leash/leash.yaml", facts);
  const Finding* f = FindField(findings, "user");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity(), leash::v1::SEVERITY_ERROR);
  EXPECT_THAT(f->message(), HasSubstr("/etc/leash/leash.yaml names no user"));
  EXPECT_THAT(f->message(), HasSubstr("leash init --user <name>"));
  EXPECT_TRUE(HasBlockingFinding(findings));
}

TEST(ValidateStart, WritesAndValidateAgree_AUserThatDoesNotResolveIsAnError) {
  Config c;
  c.set_user("fido");
  StartFacts facts;
  facts.user_exists = [](absl::string_view name) -> absl::StatusOr<bool> { return name != "fido"; };
  std::vector<Finding> findings = ValidateStart(c, "leash.yaml", facts);
  const Finding* f = FindField(findings, "user");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity(), leash::v1::SEVERITY_ERROR);
  EXPECT_THAT(f->message(), HasSubstr("the leashed user 'fido' does not exist"));
  facts.user_exists = [](absl::string_view) -> absl::StatusOr<bool> {
    return absl::UnavailableError("nsswitch down");
  };
  findings = ValidateStart(c, "leash.yaml", facts);
  ASSERT_NE(FindField(findings, "user"), nullptr);
  EXPECT_THAT(FindField(findings, "user")->message(), HasSubstr("nsswitch down"));
  facts.user_exists = [](absl::string_view) -> absl::StatusOr<bool> { return true; };
  EXPECT_TRUE(ValidateStart(c, "leash.yaml", facts).empty());
}

Finding Blocking(absl::string_view field, absl::string_view message) {
  Finding finding;
  finding.set_severity(leash::v1::SEVERITY_ERROR);
  finding.set_source("floor");
  finding.set_field(std::string(field));
  finding.set_message(std::string(message));
  return finding;
}

TEST(NewBlockingFindings, WritesAndValidateAgree_OnlyErrorsTheWriteAddsCount) {
  Finding warning = Blocking("fail_mode", "w");
  warning.set_severity(leash::v1::SEVERITY_WARNING);
  // An error already there (its count changed) is not the write's; a warning never blocks.
  const std::vector<Finding> before = {Blocking("network.allow", "(1 entry)")};
  const std::vector<Finding> after = {Blocking("network.allow", "(2 entries)"), warning,
                                      Blocking("tools.allow", "never consulted")};
  std::vector<Finding> added = NewBlockingFindings(before, after);
  ASSERT_EQ(added.size(), 1u);
  EXPECT_EQ(added[0].field(), "tools.allow");
  EXPECT_TRUE(NewBlockingFindings(after, before).empty());
}

// An IP/CIDR allow entry is what lets a name lead to a guarded address (the proxy's destination
// guard yields to it): validate names every guarded address or range an entry opens, the cloud
// metadata addresses by what they are, whether the entry names one exactly or holds it.
TEST(Validate, AnAllowEntryOpeningAGuardedAddressIsNamed) {
  struct Case {
    const char* entry;
    std::vector<std::string> named;  // fragments the finding must hold; empty: no finding
  };
  const std::vector<Case> cases = {
      {"168.63.129.16", {"168.63.129.16: Azure's platform address (WireServer)"}},
      {"169.254.169.254/32", {"169.254.169.254: the cloud metadata address"}},
      {"[fd00:ec2::254]:80", {"fd00:ec2::254: the cloud metadata address"}},
      {"100.64.0.0/10",
       {"100.100.100.200: the Alibaba Cloud metadata address", "shared (carrier-grade NAT)"}},
      {"0.0.0.0/0",
       {"169.254.169.254: the cloud metadata address", "168.63.129.16: Azure's platform address",
        "loopback 127.0.0.0/8"}},
      {"10.1.0.0/16", {"private 10.0.0.0/8"}},
      {"::/0", {"fd00:ec2::254: the cloud metadata address", "loopback address ::1"}},
      {"192.0.2.0/24", {}},
      {"168.63.129.17", {}},
      {"github.com", {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.entry);
    Config config;
    config.mutable_network()->set_mode(leash::v1::MODE_WHITELIST);
    config.mutable_network()->mutable_allow()->add_entries(c.entry);
    const std::vector<Finding> findings = ValidateConfig(config, "floor");
    const Finding* found = nullptr;
    for (const Finding& f : findings) {
      if (f.field() == "network.allow" && f.entry() == c.entry) found = &f;
    }
    if (c.named.empty()) {
      EXPECT_EQ(found, nullptr) << found->message();
      continue;
    }
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(found->severity(), leash::v1::SEVERITY_WARNING);
    EXPECT_EQ(found->source(), "floor");
    EXPECT_THAT(found->message(), HasSubstr("destination guard"));
    for (const std::string& fragment : c.named) {
      EXPECT_THAT(found->message(), HasSubstr(fragment));
    }
    EXPECT_FALSE(HasBlockingFinding(findings));
  }
}

}  // namespace
}  // namespace leash::engine
