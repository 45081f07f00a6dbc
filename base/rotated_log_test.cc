// LogRotations and ReadLogLines over real files in a temp folder, named and compressed as
// logrotate leaves them (packaging/logrotate.d/leash: `.1` plain, older ones `.gz`).
#include "base/rotated_log.h"

#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace leash::base {
namespace {

class RotatedLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    std::string pattern = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/rotated-XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    log_ = dir_ + "/decisions.jsonl";
  }

  static void WritePlain(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }
  static void WriteGzip(const std::string& path, const std::string& text) {
    gzFile gz = gzopen(path.c_str(), "wb");
    ASSERT_NE(gz, nullptr);
    ASSERT_EQ(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())),
              static_cast<int>(text.size()));
    ASSERT_EQ(gzclose(gz), Z_OK);
  }

  std::vector<std::string> ReadAll(absl::Status* status = nullptr) {
    std::vector<std::string> lines;
    for (const LogFile& file : LogRotations(log_)) {
      absl::Status read = ReadLogLines(file, [&](absl::string_view line) {
        lines.emplace_back(line);
        return true;
      });
      if (status != nullptr && !read.ok()) *status = read;
    }
    return lines;
  }

  std::string dir_;
  std::string log_;
};

TEST_F(RotatedLogTest, ListsTheRotationsOldestFirstThenTheLog) {
  WritePlain(log_, "d\n");
  WritePlain(log_ + ".1", "c\n");
  WriteGzip(log_ + ".2.gz", "b\n");
  WriteGzip(log_ + ".3.gz", "a\n");
  WriteGzip(log_ + ".5.gz", "never read: .4 is missing\n");
  const std::vector<LogFile> files = LogRotations(log_);
  ASSERT_EQ(files.size(), 4u);
  EXPECT_EQ(files[0].path, log_ + ".3.gz");
  EXPECT_TRUE(files[0].compressed);
  EXPECT_EQ(files[2].path, log_ + ".1");
  EXPECT_FALSE(files[2].compressed);
  EXPECT_EQ(files[3].path, log_);
  EXPECT_EQ(ReadAll(), (std::vector<std::string>{"a", "b", "c", "d"}));
}

TEST_F(RotatedLogTest, ACompressedFirstRotationAndNoLogYet) {
  // A rotation without delaycompress compresses .1 too; right after a rotation with nothing
  // written since, the log itself may be missing.
  WriteGzip(log_ + ".1.gz", "x\ny");
  EXPECT_EQ(ReadAll(), (std::vector<std::string>{"x", "y"}));
}

TEST_F(RotatedLogTest, LongCompressedFileReadsWhole) {
  std::string text;
  for (int i = 0; i < 200000; ++i) absl::StrAppend(&text, "{\"ref\":\"r", i, "\"}\n");
  WriteGzip(log_ + ".1.gz", text);
  const std::vector<std::string> lines = ReadAll();
  ASSERT_EQ(lines.size(), 200000u);
  EXPECT_EQ(lines.front(), "{\"ref\":\"r0\"}");
  EXPECT_EQ(lines.back(), "{\"ref\":\"r199999\"}");
}

TEST_F(RotatedLogTest, StopsWhenAsked) {
  WritePlain(log_, "a\nb\nc\n");
  std::vector<std::string> lines;
  ASSERT_TRUE(ReadLogLines({log_, false}, [&](absl::string_view line) {
                lines.emplace_back(line);
                return lines.size() < 2;
              }).ok());
  EXPECT_EQ(lines, (std::vector<std::string>{"a", "b"}));
}

TEST_F(RotatedLogTest, ACutShortCompressedFileIsAnErrorNamingIt) {
  std::string text;
  for (int i = 0; i < 10000; ++i) absl::StrAppend(&text, "line ", i, " of a rotated log\n");
  WriteGzip(log_ + ".1.gz", text);
  ASSERT_EQ(truncate((log_ + ".1.gz").c_str(), 200), 0);
  absl::Status status;
  ReadAll(&status);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find(log_ + ".1.gz"), std::string::npos) << status;
}

}  // namespace
}  // namespace leash::base
