// The per-UID budget of acting-process reads: one subject's flood spends its own budget, never
// another's, and each second starts anew.
#include "fswatch/process_read_budget.h"

#include "gtest/gtest.h"

namespace leash::fswatch {
namespace {

constexpr int64_t kSecond = 1000000000;

TEST(ProcessReadBudget, AFloodingUidSpendsOnlyItsOwnBudgetAndEachSecondStartsAnew) {
  ProcessReadBudget budget(3);
  const int64_t t = 41 * kSecond + 5;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(budget.Take(1001, t + i));
  EXPECT_FALSE(budget.Take(1001, t + 10));
  EXPECT_FALSE(budget.Take(1001, t + kSecond - 6));
  EXPECT_TRUE(budget.Take(1002, t + 11)) << "another UID's budget is its own";
  EXPECT_TRUE(budget.Take(1001, 42 * kSecond)) << "a new second";
}

TEST(ProcessReadBudget, ZeroReadsNothing) {
  ProcessReadBudget budget(0);
  EXPECT_FALSE(budget.Take(0, 0));
}

}  // namespace
}  // namespace leash::fswatch
