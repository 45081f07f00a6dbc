#include "test/network/traffic_world.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "test/fixtures/subprocess.h"

namespace leash::testing {
namespace {

// Copies the lnft_probe runfile into `mount` (mode 0755) and returns its path there.
absl::StatusOr<std::string> InstallProbe(const TmpfsMount& mount) {
  const char* runfiles = std::getenv("TEST_SRCDIR");
  if (runfiles == nullptr) return absl::FailedPreconditionError("TEST_SRCDIR is not set");
  const std::string source = absl::StrCat(runfiles, "/leash/test/network/lnft_probe");
  const std::string target = absl::StrCat(mount.path(), "/lnft_probe");
  std::ifstream in(source, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", source));
  std::ofstream out(target, std::ios::binary);
  out << in.rdbuf();
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", target));
  if (chmod(target.c_str(), 0755) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("chmod ", target));
  }
  return target;
}

}  // namespace

void TrafficTest::SetUp() {
  RootTest::SetUp();
  if (!Ready()) return;
  absl::Status veth = ns_->AddVethPair({"192.0.2.10/24", "2001:db8::10/64"},
                                       {"192.0.2.11/24", "2001:db8::11/64"});
  ASSERT_TRUE(veth.ok()) << veth;
  a_ = AddAccount(absl::StrCat("lnft-a-", getpid()));
  ASSERT_NE(a_, nullptr);
  b_ = AddAccount(absl::StrCat("lnft-b-", getpid()));
  ASSERT_NE(b_, nullptr);
  ASSERT_NE(MountTmpfs(), nullptr);
  absl::StatusOr<std::string> probe = InstallProbe(*fs_);
  ASSERT_TRUE(probe.ok()) << probe.status();
  probe_ = *probe;
}

std::string TrafficTest::Probe(const TestAccount* account, const std::string& proto,
                               const std::string& address, uint16_t port) const {
  std::vector<std::string> argv = {probe_, proto, address, absl::StrCat(port)};
  if (account != nullptr) argv = account->AsUser(argv);
  absl::StatusOr<RunResult> run = ns_->Run(argv, absl::Seconds(20));
  if (!run.ok()) return absl::StrCat("probe failed: ", run.status().ToString());
  if (run->exit_code != 0) {
    return absl::StrCat("probe failed: exit ", run->exit_code, ": ", run->out);
  }
  return std::string(absl::StripAsciiWhitespace(run->out));
}

void TrafficTest::StartServer(std::vector<TaggedServer::Endpoint> endpoints) {
  absl::StatusOr<std::unique_ptr<TaggedServer>> server = TaggedServer::Start(std::move(endpoints));
  ASSERT_TRUE(server.ok()) << server.status();
  server_ = *std::move(server);
}

}  // namespace leash::testing
