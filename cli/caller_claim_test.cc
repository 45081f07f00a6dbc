// The unbind ledger's claim of who ran the CLI: never "unknown", the operator behind sudo and
// the session's login UID named when there are any.
#include "cli/caller_claim.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(UnbindLedgerWho, SudoUserAndLoginUid) {
  CallerFacts facts;
  facts.uid = 0;
  facts.sudo_user = "alice";
  facts.sudo_uid = "1000";
  facts.login_uid = 1000;
  facts.login_name = "alice";
  facts.user = "root";
  EXPECT_EQ(DescribeCaller(facts), "sudo from alice (SUDO_UID 1000); login uid 1000 (alice); uid 0");
}

TEST(UnbindLedgerWho, RootWithoutSudoIsNotUnknown) {
  CallerFacts facts;
  const std::string who = DescribeCaller(facts);
  EXPECT_EQ(who, "no login uid; uid 0");
  EXPECT_THAT(who, Not(HasSubstr("unknown")));
  facts.user = "root";
  facts.login_uid = 1001;
  EXPECT_EQ(DescribeCaller(facts), "login uid 1001; USER root; uid 0");
}

TEST(UnbindLedgerWho, ThisProcessReadsItsLoginUid) {
  const CallerFacts facts = ReadCallerFacts();
  EXPECT_EQ(facts.uid, getuid());
  EXPECT_THAT(DescribeCaller(facts), HasSubstr(absl::StrCat("uid ", getuid())));
}

}  // namespace
}  // namespace leash::cli
