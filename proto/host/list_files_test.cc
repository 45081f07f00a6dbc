// The list reader against real files: what it trusts, and what it says when it does not.
// Root: a trusted list is one root owns, so the files are made as root and chowned away.
#include "proto/host/list_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/root.h"
#include "test/fixtures/temp_dir.h"

namespace leash::host {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kSystem[] = "/etc/leash/lists/system";

class ListFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LEASH_REQUIRE_ROOT();
    absl::StatusOr<std::unique_ptr<testing::TempDir>> dir = testing::TempDir::Create("lists");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *std::move(dir);
    folder_ = dir_->path() + "/lists";
    ASSERT_EQ(mkdir(folder_.c_str(), 0755), 0);
    ASSERT_EQ(chmod(dir_->path().c_str(), 0755), 0);
    config_.mutable_filesystem()->mutable_allow()->add_entries("@system");
  }
  void Write(const std::string& name, const std::string& text, mode_t mode = 0644) {
    const std::string path = folder_ + "/" + name;
    std::ofstream(path) << text;
    ASSERT_EQ(chmod(path.c_str(), mode), 0);
  }
  engine::ListTexts Read() { return ReadListFiles({&config_}, folder_); }

  std::unique_ptr<testing::TempDir> dir_;
  std::string folder_;
  leash::v1::Config config_;
};

TEST(ListFolder, IsBesideTheConfigFile) {
  EXPECT_EQ(ListFolderFor("/etc/leash/leash.yaml"), "/etc/leash/lists");
  EXPECT_EQ(ListFolderFor("/tmp/t/leash.yaml"), "/tmp/t/lists");
}

TEST_F(ListFilesTest, ARootOwnedListIsReadUnderItsCanonicalName) {
  Write("system", "/usr\n");
  engine::ListTexts texts = Read();
  ASSERT_EQ(texts.size(), 1u);
  ASSERT_TRUE(texts[kSystem].ok()) << texts[kSystem].status();
  EXPECT_EQ(*texts[kSystem], "/usr\n");
}

TEST_F(ListFilesTest, OnlyListsAPolicyUsesAreRead) {
  Write("system", "/usr\n");
  leash::v1::Config none;
  EXPECT_THAT(ReadListFiles({&none}, folder_), IsEmpty());
}

TEST_F(ListFilesTest, AListAnyoneButRootCouldChangeIsRefused) {
  Write("system", "/usr\n", 0666);
  engine::ListTexts texts = Read();
  ASSERT_FALSE(texts[kSystem].ok());
  EXPECT_THAT(std::string(texts[kSystem].status().message()), HasSubstr("chmod go-w"));
  Write("system", "/usr\n", 0644);
  ASSERT_EQ(chown((folder_ + "/system").c_str(), 1, 1), 0);
  texts = Read();
  ASSERT_FALSE(texts[kSystem].ok());
  EXPECT_THAT(std::string(texts[kSystem].status().message()), HasSubstr("not root"));
}

TEST_F(ListFilesTest, AListFolderAnyoneCanWriteIsRefused) {
  Write("system", "/usr\n");
  ASSERT_EQ(chmod(folder_.c_str(), 0777), 0);
  engine::ListTexts texts = Read();
  ASSERT_FALSE(texts[kSystem].ok());
  EXPECT_THAT(std::string(texts[kSystem].status().message()), HasSubstr("list folder"));
}

TEST_F(ListFilesTest, ASymlinkedListIsNotFollowed) {
  std::ofstream(dir_->path() + "/elsewhere") << "/\n";
  ASSERT_EQ(symlink((dir_->path() + "/elsewhere").c_str(), (folder_ + "/system").c_str()), 0);
  engine::ListTexts texts = Read();
  ASSERT_FALSE(texts[kSystem].ok());
  EXPECT_THAT(std::string(texts[kSystem].status().message()), HasSubstr("symlink"));
}

TEST_F(ListFilesTest, AMissingListSaysHowToRestoreIt) {
  engine::ListTexts texts = Read();
  ASSERT_FALSE(texts[kSystem].ok());
  EXPECT_THAT(std::string(texts[kSystem].status().message()), HasSubstr("reinstall"));
}

TEST(ListEdits, AnEditIsDescribedByWhatItGainedAndLost) {
  engine::ListTexts before, after;
  before[kSystem] = std::string("/usr\n/etc/hosts\n");
  after[kSystem] = std::string("/usr\n# comment\n/opt\n");
  const std::vector<std::string> edits =
      DescribeListEdits(EntriesOfLists(before), EntriesOfLists(after));
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_THAT(edits[0], HasSubstr("gained '/opt'"));
  EXPECT_THAT(edits[0], HasSubstr("lost '/etc/hosts'"));
  EXPECT_THAT(edits[0], HasSubstr("widens every subject"));
  EXPECT_THAT(DescribeListEdits(EntriesOfLists(after), EntriesOfLists(after)), IsEmpty());
}

}  // namespace
}  // namespace leash::host
