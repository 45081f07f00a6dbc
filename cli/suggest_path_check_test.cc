// The path judgement over a host in memory: the loader under every name, and every way a path
// can lead to a file another account than root could replace.
#include "cli/suggest_path_check.h"

#include <string>

#include "cli/testing/fake_path_facts.h"
#include "cli/testing/suggest_rules.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::cli {
namespace {

using testing::FakePathFacts;
using ::testing::HasSubstr;
using testing::Host;
using ::testing::IsEmpty;

TEST(IsLoaderName, EveryLoaderSpelling) {
  for (const char* name : {"ld-linux-x86-64.so.2", "ld.so", "ld-linux.so.2", "ld64.so.2",
                           "ld-musl-x86_64.so.1", "ld-2.36.so", "ld-linux-aarch64.so.1"}) {
    EXPECT_TRUE(IsLoaderName(name)) << name;
  }
  for (const char* name : {"ld", "ldd", "ldconfig", "ld.bfd", "ld.gold", "old.so", "gold"}) {
    EXPECT_FALSE(IsLoaderName(name)) << name;
  }
}

ProgramCheck Check() { return ProgramCheck(Host().facts, {}, {"/usr/bin/git", "/opt/custom/app"}); }

TEST(SuggestNeverProposesTheLoader, UnderAnyName) {
  const ProgramCheck check = Check();
  for (const char* loader :
       {"/lib64/ld-linux-x86-64.so.2", "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
        "/usr/bin/ld.so", "/usr/local/bin/rtld-copy", "/opt/musl/lib/ld-musl-x86_64.so.1",
        "/opt/custom/rtld"}) {
    EXPECT_THAT(check.WhyNotSuggested(loader), HasSubstr("the ELF loader")) << loader;
  }
  EXPECT_THAT(check.WhyNotSuggested("/usr/bin/git"), IsEmpty());
  EXPECT_THAT(check.WhyNotSuggested("/opt/custom/app"), IsEmpty());
}

TEST(SuggestNeverProposesTheLoader, NamedByTheLogAsAnInterpreter) {
  FakePathFacts facts;
  facts.RootProgram("/opt/x/runner");
  EXPECT_THAT(ProgramCheck(facts, {}, {}).WhyNotSuggested("/opt/x/runner"), IsEmpty());
  EXPECT_THAT(ProgramCheck(facts, {"/opt/x/runner"}, {}).WhyNotSuggested("/opt/x/runner"),
              HasSubstr("the ELF loader"));
}

struct WritableCase {
  const char* path;
  const char* why;
};

class SuggestNeverProposesAWritableProgram : public ::testing::TestWithParam<WritableCase> {};

TEST_P(SuggestNeverProposesAWritableProgram, SaysWhy) {
  EXPECT_THAT(Check().WhyNotSuggested(GetParam().path), HasSubstr(GetParam().why));
}

INSTANTIATE_TEST_SUITE_P(
    Table, SuggestNeverProposesAWritableProgram,
    ::testing::Values(
        WritableCase{"/home/agent/bin/tool", "the folder /home/agent is owned by uid 2001"},
        WritableCase{"/home/agent/bin/git", "the folder /home/agent is owned by uid 2001"},
        WritableCase{"/usr/bin/agent-tool", "the folder /home/agent is owned by uid 2001"},
        WritableCase{"/srv/shared/tool",
                     "the folder /srv/shared (mode 0777) is writable by its group or by others"},
        WritableCase{"/srv/group/tool", "the folder /srv/group (mode 0775)"},
        WritableCase{"/usr/bin/group-writable", "/usr/bin/group-writable (mode 0775)"},
        WritableCase{"/usr/bin/acl-tool", "has an ACL granting write"},
        WritableCase{"/tmp/agent-tool", "/tmp/agent-tool in it is owned by uid 2001"},
        WritableCase{"/tmp/agent-dir/tool", "/tmp/agent-dir in it is owned by uid 2001"},
        WritableCase{"/usr/bin/other-owner", "/usr/bin/other-owner is owned by uid 3000"},
        WritableCase{"/proc/self/exe", "is on procfs"},
        WritableCase{"/proc/4242/exe", "is on procfs"}, WritableCase{"/mnt/fuse/tool", "FUSE"},
        WritableCase{"/usr/bin/loop-a", "more than 40 links"},
        WritableCase{"/usr/bin/missing", "no such file"},
        WritableCase{"git", "not an absolute path"},
        WritableCase{"bin/git", "not an absolute path"}));

TEST(ResolveRootOnly, AStickyFolderKeepsRootsEntryRoots) {
  EXPECT_THAT(ResolveRootOnly(Host().facts, "/tmp/root-tool").why, IsEmpty());
  EXPECT_THAT(Check().WhyNotSuggested("/tmp/root-tool"), IsEmpty());
}

TEST(ResolveRootOnly, FollowsLinksAndDotDotAsTheKernel) {
  const Resolution resolution = ResolveRootOnly(Host().facts, "/usr/bin/ld.so");
  EXPECT_EQ(resolution.resolved, "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2");
  EXPECT_THAT(resolution.why, IsEmpty());
  EXPECT_THAT(resolution.names,
              ::testing::ElementsAre("/usr", "/usr/bin", "/usr/bin/ld.so", "/usr/lib",
                                     "/usr/lib/x86_64-linux-gnu",
                                     "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"));
}

TEST(ResolveRootOnly, AFolderOnlyRootCanFill) {
  EXPECT_THAT(ResolveRootOnly(Host().facts, "/srv/data").why, IsEmpty());
  EXPECT_THAT(ResolveRootOnly(Host().facts, "/home/agent/work").why,
              HasSubstr("owned by uid 2001"));
}

}  // namespace
}  // namespace leash::cli
