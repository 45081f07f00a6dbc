// ReadDecisionLog over real files in a temp folder, rotated as logrotate leaves the decision
// log (packaging/logrotate.d/leash: `.1` plain, older ones gzip): a --since that reaches back
// into a rotation reads it, and from there on, oldest first.
#include "cli/suggest_inputs.h"

#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Line(const std::string& ref, const std::string& ts) {
  return absl::StrCat(R"({"ts":")", ts, R"(","ref":")", ref,
                      R"(","uid":2001,"surface":"tools","action":"allow","reason":"x"})");
}

class ReadDecisionLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    std::string pattern = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/suggest-log-XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    log_ = pattern + "/decisions.jsonl";
    WriteGzip(log_ + ".2.gz", {Line("r1", "2026-11-16T10:00:00Z"), Line("r2", "2026-11-17T10:00:00Z")});
    std::ofstream(log_ + ".1") << Line("r3", "2026-11-23T10:00:00Z") << "\n"
                               << Line("r4", "2026-11-24T10:00:00Z") << "\n";
    std::ofstream(log_) << Line("r5", "2026-11-30T10:00:00Z") << "\n";
  }

  static void WriteGzip(const std::string& path, const std::vector<std::string>& lines) {
    gzFile gz = gzopen(path.c_str(), "wb");
    ASSERT_NE(gz, nullptr);
    for (const std::string& line : lines) {
      const std::string text = line + "\n";
      ASSERT_EQ(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())),
                static_cast<int>(text.size()));
    }
    ASSERT_EQ(gzclose(gz), Z_OK);
  }

  // The refs read, and the files.
  std::vector<std::string> Refs(absl::Time since, std::vector<std::string>* files = nullptr) {
    std::vector<std::string> refs;
    absl::StatusOr<std::vector<std::string>> read =
        ReadDecisionLog(log_, since, [&](absl::string_view line) {
          const size_t at = line.find("\"ref\":\"") + 7;
          refs.emplace_back(line.substr(at, line.find('"', at) - at));
        });
    EXPECT_TRUE(read.ok()) << read.status();
    if (read.ok() && files != nullptr) *files = *read;
    return refs;
  }

  static absl::Time At(const std::string& text) {
    absl::Time t;
    std::string error;
    EXPECT_TRUE(absl::ParseTime(absl::RFC3339_full, text, &t, &error)) << error;
    return t;
  }

  std::string log_;
};

TEST_F(ReadDecisionLogTest, ASinceInTheLogReadsOnlyTheLog) {
  std::vector<std::string> files;
  EXPECT_THAT(Refs(At("2026-11-30T12:00:00Z"), &files), ElementsAre("r5"));
  EXPECT_THAT(files, ElementsAre(log_));
}

TEST_F(ReadDecisionLogTest, ASinceInARotationReadsItThenTheNewerFiles) {
  std::vector<std::string> files;
  EXPECT_THAT(Refs(At("2026-11-24T00:00:00Z"), &files), ElementsAre("r3", "r4", "r5"));
  EXPECT_THAT(files, ElementsAre(log_ + ".1", log_));
  // Before the log's first line: the rotation may hold lines after the start point.
  EXPECT_THAT(Refs(At("2026-11-30T00:00:00Z"), &files), ElementsAre("r3", "r4", "r5"));
  EXPECT_THAT(files, ElementsAre(log_ + ".1", log_));
  // Into the compressed one.
  EXPECT_THAT(Refs(At("2026-11-17T00:00:00Z"), &files), ElementsAre("r1", "r2", "r3", "r4", "r5"));
  EXPECT_THAT(files, ElementsAre(log_ + ".2.gz", log_ + ".1", log_));
}

TEST_F(ReadDecisionLogTest, NoSinceReadsEveryRotation) {
  EXPECT_THAT(Refs(absl::InfinitePast()), ElementsAre("r1", "r2", "r3", "r4", "r5"));
}

TEST_F(ReadDecisionLogTest, ADamagedRotationIsAnErrorNamingIt) {
  ASSERT_EQ(truncate((log_ + ".2.gz").c_str(), 20), 0);
  absl::StatusOr<std::vector<std::string>> read =
      ReadDecisionLog(log_, absl::InfinitePast(), [](absl::string_view) {});
  EXPECT_FALSE(read.ok());
  EXPECT_THAT(read.status().message(), HasSubstr(log_ + ".2.gz"));
}

}  // namespace
}  // namespace leash::cli
