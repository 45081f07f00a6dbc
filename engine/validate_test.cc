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

TEST(Validate, CleanPolicyHasNoFindings) {
  Config c;
  c.mutable_network()->set_mode(leash::v1::MODE_WHITELIST);
  c.mutable_network()->mutable_allow()->add_entries("github.com");
  EXPECT_TRUE(ValidateConfig(c, "floor").empty());
}

}  // namespace
}  // namespace leash::engine
