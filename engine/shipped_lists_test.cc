// The lists the package ships (packaging/lists) and the example policy that uses them
// (docs/examples/leash.yaml): every entry valid for the field it is meant for, @system covering
// what programs need and never a secret of the system's.
#include <fstream>
#include <sstream>
#include <string>

#include "engine/compiled_policy.h"
#include "engine/config_yaml.h"
#include "engine/inert_entries.h"
#include "engine/named_lists.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::engine {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

ListTexts Shipped() {
  ListTexts texts;
  for (const char* name : {"system", "package-registries", "github"}) {
    texts[absl::StrCat(kListFolder, "/", name)] = ReadAll(absl::StrCat("packaging/lists/", name));
  }
  return texts;
}

CompiledPolicy ExamplePolicy() {
  absl::StatusOr<leash::v1::Config> example = ParseConfigYaml(
      ReadAll("docs/examples/leash.yaml"), ConfigKind::kFloor, "docs/examples/leash.yaml");
  EXPECT_TRUE(example.ok()) << example.status();
  EXPECT_TRUE(InertEntries(*example).empty());
  absl::StatusOr<leash::v1::Config> expanded = ExpandLists(*example, Shipped());
  EXPECT_TRUE(expanded.ok()) << expanded.status();
  CompiledPolicy policy = CompiledPolicy::Compile(*expanded);
  EXPECT_TRUE(policy.skipped_entries().empty());
  return policy;
}

TEST(ShippedLists, TheExamplePolicyExpandsWithEveryEntryValid) {
  const CompiledPolicy policy = ExamplePolicy();
  EXPECT_TRUE(policy.DecidePath("/home/fido/work/src/main.py").allowed());
  EXPECT_FALSE(policy.DecidePath("/home/fido/work/.env").allowed());
  EXPECT_FALSE(policy.DecidePath("/home/other/notes").allowed());
}

TEST(ShippedLists, SystemCoversWhatProgramsNeedToStartAndRun) {
  const CompiledPolicy policy = ExamplePolicy();
  for (const char* path :
       {"/usr/bin/git", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2",
        "/usr/lib/python3.11/os.py", "/usr/lib/git-core/git-remote-https",
        "/usr/lib/locale/locale-archive", "/etc/ld.so.cache", "/etc/nsswitch.conf",
        "/etc/passwd", "/etc/group", "/etc/hosts", "/etc/resolv.conf",
        "/etc/ssl/certs/ca-certificates.crt", "/etc/localtime", "/etc/gitconfig",
        "/etc/pip.conf", "/dev/null", "/dev/tty", "/dev/urandom"}) {
    EXPECT_TRUE(policy.DecidePath(path).allowed()) << path;
  }
  // The way to them can be listed by name.
  EXPECT_TRUE(policy.DecideDirectory("/etc").allowed());
  EXPECT_TRUE(policy.DecideDirectory("/").allowed());
}

TEST(ShippedLists, SystemNeverCoversASecretOfTheSystem) {
  const CompiledPolicy policy = ExamplePolicy();
  for (const char* path :
       {"/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/ssh/ssh_host_ed25519_key",
        "/etc/leash/leash.yaml", "/etc/leash/lists/system", "/etc/sudoers",
        "/etc/sudoers.d/admins", "/etc/ssl/private/server.key", "/root/.bash_history",
        "/home/other/.ssh/id_ed25519", "/var/lib/leash/bindings.yaml", "/etc/subuid"}) {
    EXPECT_FALSE(policy.DecidePath(path).allowed()) << path;
  }
  for (const char* folder : {"/etc/ssh", "/etc/leash", "/etc/sudoers.d", "/etc/ssl/private",
                             "/root", "/var/lib/leash"}) {
    EXPECT_FALSE(policy.DecideDirectory(folder).allowed()) << folder;
  }
}

TEST(ShippedLists, NetworkListsReachTheRegistriesAndGithub) {
  const CompiledPolicy policy = ExamplePolicy();
  for (const char* host : {"pypi.org", "files.pythonhosted.org", "registry.npmjs.org",
                           "crates.io", "static.crates.io", "index.crates.io",
                           "proxy.golang.org", "deb.debian.org", "github.com",
                           "api.github.com", "codeload.github.com",
                           "objects.githubusercontent.com", "raw.githubusercontent.com"}) {
    NetworkSubject subject;
    subject.domain = host;
    subject.port = 443;
    EXPECT_TRUE(policy.DecideNetwork(subject).allowed()) << host;
  }
  NetworkSubject gist;
  gist.domain = "gist.github.com";
  gist.port = 443;
  EXPECT_FALSE(policy.DecideNetwork(gist).allowed());
}

}  // namespace
}  // namespace leash::engine
