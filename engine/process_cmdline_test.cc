#include "engine/process_cmdline.h"

#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "engine/detectors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::engine {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::unique_ptr<const tools::Inspector> MakeInspector() {
  auto inspector = tools::Inspector::Create();
  EXPECT_TRUE(inspector.ok()) << inspector.status();
  return *std::move(inspector);
}

// A token an agent passes on its command line is masked in the line as it would be in a tool
// input: the prefix and last 4 characters kept, never the whole of it.
TEST(LoggedCmdline, MasksASecretInTheArguments) {
  const auto inspector = MakeInspector();
  const std::string token = "ghp_0123456789abcdefABCDEF0123456789wxyz";
  const std::string raw = std::string("curl\0-H\0Authorization: Bearer ", 30) + token +
                          std::string("\0https://example.com\0", 21);
  const std::string line = LoggedCmdline(raw, *inspector);
  EXPECT_THAT(line, Not(HasSubstr(token)));
  EXPECT_THAT(line, HasSubstr("curl -H Authorization: Bearer ghp_****wxyz https://example.com"));
  EXPECT_FALSE(absl::EndsWith(line, " "));
}

TEST(LoggedCmdline, JoinsArgumentsWithSpacesAndDropsTheTrailingNul) {
  const auto inspector = MakeInspector();
  EXPECT_EQ(LoggedCmdline(std::string("cat\0/etc/shadow\0", 16), *inspector), "cat /etc/shadow");
  EXPECT_EQ(LoggedCmdline("", *inspector), "");
}

// A long command line is cut to the bound, on a character boundary, and says it was cut; a
// secret across the bound is masked before the cut, so no part of it shows unmasked.
TEST(LoggedCmdline, IsCutToTheBoundWithAMarker) {
  const auto inspector = MakeInspector();
  const std::string raw = "printf " + std::string(600, 'a');
  const std::string line = LoggedCmdline(raw, *inspector);
  EXPECT_EQ(line.size(), kMaxCmdlineBytes);
  EXPECT_TRUE(absl::EndsWith(line, kCmdlineCutMarker));
  EXPECT_EQ(LoggedCmdline(std::string(kMaxCmdlineBytes, 'b'), *inspector).size(),
            kMaxCmdlineBytes);
  EXPECT_FALSE(absl::EndsWith(LoggedCmdline(std::string(kMaxCmdlineBytes, 'b'), *inspector),
                              kCmdlineCutMarker));

  const std::string token = "ghp_0123456789abcdefABCDEF0123456789wxyz";
  const std::string straddling = std::string(kMaxCmdlineBytes - 20, 'c') + " " + token;
  EXPECT_THAT(LoggedCmdline(straddling, *inspector), Not(HasSubstr("ghp_0123456789")));
  // Multibyte characters are never split by the cut.
  std::string wide;
  while (wide.size() < 2 * kMaxCmdlineBytes) wide += "\xc3\xa9";
  const std::string cut = LoggedCmdline(wide, *inspector);
  EXPECT_LE(cut.size(), kMaxCmdlineBytes);
  const std::string body = cut.substr(0, cut.size() - kCmdlineCutMarker.size());
  EXPECT_EQ(body.size() % 2, 0u);
}

}  // namespace
}  // namespace leash::engine
