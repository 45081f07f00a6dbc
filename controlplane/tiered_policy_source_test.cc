// TieredPolicySource with real files: the floor, the bindings and profiles, and the named lists
// beside the floor. Root: a list is trusted only when root owns it (the files made here are).
#include "controlplane/tiered_policy_source.h"

#include <sys/stat.h>

#include <fstream>

#include "absl/strings/str_join.h"
#include "controlplane/testing/state_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/root.h"

namespace leash::controlplane {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::leash::controlplane::testing::Host;
using ::leash::controlplane::testing::TempStateDir;
using ::leash::controlplane::testing::WriteRaw;

constexpr char kFloor[] =
    "user: fido\n"
    "filesystem:\n"
    "  mode: whitelist\n"
    "  allow: [\"@work\", /home/fido/work]\n"
    "  deny: []\n";

class TieredPolicySourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LEASH_REQUIRE_ROOT();
    chmod(dir_.root().c_str(), 0755);
    WriteRaw(floor_path(), kFloor);
    WriteList("work", "# shared tools\n/opt/tools\n");
  }
  std::string floor_path() const { return dir_.root() + "/leash.yaml"; }
  void WriteList(const std::string& name, const std::string& text) {
    WriteRaw(dir_.root() + "/lists/" + name, text);
    chmod((dir_.root() + "/lists").c_str(), 0755);
    chmod((dir_.root() + "/lists/" + name).c_str(), 0644);
  }
  PolicySnapshot::Resolution ResolveFido(const PolicySnapshot& snapshot) {
    return snapshot.Resolve(Account("fido", 1000, 1000), /*configured_user=*/true);
  }
  static std::vector<std::string> Allow(const leash::v1::Config& config) {
    return {config.filesystem().allow().entries().begin(),
            config.filesystem().allow().entries().end()};
  }

  TempStateDir dir_;
  BindingStore store_{BindingStore::Options{dir_.state()}};
  TieredPolicySource source_{floor_path(), &store_};
};

TEST_F(TieredPolicySourceTest, AListIsExpandedIntoTheResolvedPolicy) {
  absl::StatusOr<std::unique_ptr<PolicySnapshot>> snapshot = source_.Load();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  PolicySnapshot::Resolution resolved = ResolveFido(**snapshot);
  ASSERT_TRUE(resolved.policy.ok()) << resolved.policy.status();
  EXPECT_THAT(Allow(*resolved.policy), ElementsAre("/opt/tools", "/home/fido/work"));
}

TEST_F(TieredPolicySourceTest, AnEditOfAListIsPickedUpAndSaidByTheNextLoad) {
  ASSERT_TRUE(source_.Load().ok());
  WriteList("work", "/opt/tools\n/srv/data\n");
  absl::StatusOr<std::unique_ptr<PolicySnapshot>> snapshot = source_.Load();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  PolicySnapshot::Resolution resolved = ResolveFido(**snapshot);
  ASSERT_TRUE(resolved.policy.ok()) << resolved.policy.status();
  EXPECT_THAT(Allow(*resolved.policy), ElementsAre("/opt/tools", "/srv/data", "/home/fido/work"));
  const std::vector<std::string> notes = (*snapshot)->Notes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_THAT(notes[0], HasSubstr("warning: list /etc/leash/lists/work was edited: gained "
                                  "'/srv/data'"));
  // Nothing changed since: nothing said.
  snapshot = source_.Load();
  ASSERT_TRUE(snapshot.ok());
  EXPECT_THAT((*snapshot)->Notes(), IsEmpty());
}

TEST_F(TieredPolicySourceTest, AnInvalidOrUnreadableListFailsTheSubjectClosedNamingListAndLine) {
  WriteList("work", "/opt/tools\nrelative/path\n");
  absl::StatusOr<std::unique_ptr<PolicySnapshot>> snapshot = source_.Load();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  PolicySnapshot::Resolution resolved = ResolveFido(**snapshot);
  ASSERT_FALSE(resolved.policy.ok());
  const std::string message(resolved.policy.status().message());
  EXPECT_THAT(message, HasSubstr("unusable-list"));
  EXPECT_THAT(message, HasSubstr("/etc/leash/lists/work line 2"));
  EXPECT_THAT(message, HasSubstr("relative/path"));

  chmod((dir_.root() + "/lists/work").c_str(), 0666);  // anyone could widen it
  snapshot = source_.Load();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  resolved = ResolveFido(**snapshot);
  ASSERT_FALSE(resolved.policy.ok());
  EXPECT_THAT(std::string(resolved.policy.status().message()), HasSubstr("chmod go-w"));

  unlink((dir_.root() + "/lists/work").c_str());
  snapshot = source_.Load();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_FALSE(ResolveFido(**snapshot).policy.ok());
}

TEST_F(TieredPolicySourceTest, AProfileAddingAListNeedsConsentToTheListByName) {
  const HostInputs host = Host(kFloor, {"leash-iris"});
  absl::StatusOr<WriteOutcome> saved = store_.SaveProfile(
      {"tools", "filesystem: {allow: [\"@work\", \"@extra\"]}\n", {}, "", ""}, host);
  ASSERT_TRUE(saved.ok()) << saved.status();
  absl::StatusOr<WriteOutcome> refused = store_.Bind("agent:leash-iris", "tools", {}, host);
  ASSERT_TRUE(refused.ok()) << refused.status();
  ASSERT_TRUE(refused->refusal.has_value());
  EXPECT_THAT(refused->refusal->DebugString(), HasSubstr("filesystem.allow:@extra"));
  absl::StatusOr<WriteOutcome> bound =
      store_.Bind("agent:leash-iris", "tools", {"filesystem.allow:@extra"}, host);
  ASSERT_TRUE(bound.ok()) << bound.status();
  EXPECT_TRUE(bound->written);

  WriteList("extra", "/srv/extra\n");
  absl::StatusOr<std::unique_ptr<PolicySnapshot>> snapshot = source_.Load();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  PolicySnapshot::Resolution resolved =
      (*snapshot)->Resolve(Account("leash-iris", 2000, 2000), /*configured_user=*/false);
  ASSERT_TRUE(resolved.policy.ok()) << resolved.policy.status();
  EXPECT_THAT(Allow(*resolved.policy), ElementsAre("/opt/tools", "/srv/extra"));
}

}  // namespace
}  // namespace leash::controlplane
