// ReadExecRoutes over a folder standing for / (the settings as files), and over this host.
#include "proto/host/exec_routes.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/temp_dir.h"

namespace leash::host {
namespace {

using ::testing::HasSubstr;

class ExecRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<leash::testing::TempDir>> dir =
        leash::testing::TempDir::Create("routes");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *std::move(dir);
    for (const char* sub : {"/proc", "/proc/sys", "/proc/sys/vm", "/proc/sys/user",
                            "/proc/sys/kernel", "/dev"}) {
      ASSERT_EQ(mkdir((dir_->path() + sub).c_str(), 0755), 0) << sub;
    }
  }
  void Set(const std::string& file, const std::string& value) {
    std::ofstream(dir_->path() + "/proc/sys/" + file) << value << "\n";
  }
  void Fuse(mode_t mode) {
    const std::string path = dir_->path() + "/dev/fuse";
    std::ofstream(path) << "";
    ASSERT_EQ(chmod(path.c_str(), mode), 0);
  }
  leash::v1::ExecRoute Route(const std::string& name) {
    for (const leash::v1::ExecRoute& route : ReadExecRoutes(dir_->path())) {
      if (route.name() == name) return route;
    }
    ADD_FAILURE() << "no route " << name;
    return {};
  }
  std::unique_ptr<leash::testing::TempDir> dir_;
};

TEST_F(ExecRoutesTest, MemfdNoexecBelowTwoIsOpenAndSaysTheSettingThatClosesIt) {
  Set("vm/memfd_noexec", "0");
  const leash::v1::ExecRoute open = Route("memfd exec");
  EXPECT_TRUE(open.open());
  EXPECT_EQ(open.state(), "vm.memfd_noexec = 0");
  EXPECT_THAT(open.closed_by(), HasSubstr("vm.memfd_noexec = 2"));
  EXPECT_THAT(open.breaks(), HasSubstr("MFD_NOEXEC_SEAL"));
  Set("vm/memfd_noexec", "2");
  EXPECT_FALSE(Route("memfd exec").open());
}

TEST_F(ExecRoutesTest, AKernelWithoutMemfdNoexecHasNoSwitch) {
  const leash::v1::ExecRoute route = Route("memfd exec");
  EXPECT_TRUE(route.open());
  EXPECT_EQ(route.closed_by(), "");
  EXPECT_THAT(DescribeExecRoute(route), HasSubstr("offers no setting that closes it"));
}

TEST_F(ExecRoutesTest, UserNamespacesCloseWithTheDebianSwitchOrTheCount) {
  Set("user/max_user_namespaces", "96362");
  EXPECT_TRUE(Route("user namespaces").open());
  EXPECT_THAT(Route("user namespaces").closed_by(), HasSubstr("user.max_user_namespaces = 0"));
  Set("kernel/unprivileged_userns_clone", "1");
  EXPECT_THAT(Route("user namespaces").closed_by(),
              HasSubstr("kernel.unprivileged_userns_clone = 0"));
  Set("kernel/unprivileged_userns_clone", "0");
  EXPECT_FALSE(Route("user namespaces").open());
}

TEST_F(ExecRoutesTest, FuseIsOpenWhenOthersMayOpenTheDevice) {
  Fuse(0666);
  EXPECT_TRUE(Route("FUSE").open());
  EXPECT_THAT(Route("FUSE").closed_by(), HasSubstr("0600"));
  EXPECT_EQ(Route("FUSE").state(), "/dev/fuse mode 0666");
  Fuse(0600);
  EXPECT_FALSE(Route("FUSE").open());
  // The mode as chmod and ls show it: octal.
  EXPECT_EQ(Route("FUSE").state(), "/dev/fuse mode 0600");
}

TEST_F(ExecRoutesTest, ValidateFindingsNameEachOpenRoute) {
  Set("vm/memfd_noexec", "0");
  Set("user/max_user_namespaces", "0");
  Fuse(0600);
  const std::vector<leash::v1::Finding> findings = ExecRouteFindings(ReadExecRoutes(dir_->path()));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity(), leash::v1::SEVERITY_WARNING);
  EXPECT_THAT(findings[0].message(), HasSubstr("memfd exec (vm.memfd_noexec = 0)"));
  EXPECT_THAT(findings[0].message(), HasSubstr("closed by vm.memfd_noexec = 2"));
}

TEST(ExecRoutesOnThisHost, MemfdNoexecIsReadAsTheKernelSaysIt) {
  std::ifstream in("/proc/sys/vm/memfd_noexec");
  // Linux >= 6.3 has the setting (the project's kernels do): a kernel without it fails here
  // rather than skipping.
  ASSERT_TRUE(in) << "kernel without vm.memfd_noexec";
  int value = -1;
  in >> value;
  for (const leash::v1::ExecRoute& route : ReadExecRoutes()) {
    if (route.name() != "memfd exec") continue;
    EXPECT_EQ(route.state(), "vm.memfd_noexec = " + std::to_string(value));
    EXPECT_EQ(route.open(), value < 2);
  }
}

}  // namespace
}  // namespace leash::host
