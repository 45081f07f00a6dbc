#include "cli/offline.h"

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/client.h"
#include "cli/render.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string WriteConfig(const std::string& name, const std::string& yaml) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::ofstream(path) << yaml;
  return path;
}

Args ArgsFor(const std::string& config, std::vector<std::string> words, bool json = false) {
  Args args;
  args.config_path = config;
  args.words = std::move(words);
  args.json = json;
  return args;
}

TEST(ValidateOffline, ExitsOneOnBlacklistAllowListAndInertDeny) {
  const std::string path = WriteConfig(
      "bad.yaml", "network: { mode: blacklist, allow: [x.com], deny: ['http://evil.com'] }\n");
  std::ostringstream out, err;
  EXPECT_EQ(ValidateOffline(ArgsFor(path, {"validate"}), out, err), kExitRefused);
  // Each names the place in the file it is about, as a parse error would.
  EXPECT_THAT(out.str(), HasSubstr(absl::StrCat("error    network.allow: ", path,
                                                ":1:36: network is in blacklist mode")));
  EXPECT_THAT(out.str(), HasSubstr(absl::StrCat("critical network.deny: ", path,
                                                ":1:51: deny entry 'http://evil.com'")));
  EXPECT_THAT(out.str(), HasSubstr("(offline: judged"));
}

TEST(ValidateOffline, ExitsZeroWithWarningsOnly) {
  const std::string path =
      WriteConfig("warn.yaml", "user: root\ncommands: { mode: blacklist, deny: [ssh] }\n");
  std::ostringstream out, err;
  EXPECT_EQ(ValidateOffline(ArgsFor(path, {"validate"}), out, err), kExitOk);
  EXPECT_THAT(out.str(), HasSubstr("warning  commands.mode"));
}

TEST(ValidateOffline, SaysEachOpenRouteToRunningProgramsUnseenWithTheSettingThatClosesIt) {
  std::ifstream setting("/proc/sys/vm/memfd_noexec");
  int memfd_noexec = -1;
  setting >> memfd_noexec;
  const std::string path =
      WriteConfig("routes.yaml", "user: root\ncommands: { mode: whitelist }\n");
  std::ostringstream out, err;
  EXPECT_EQ(ValidateOffline(ArgsFor(path, {"validate"}), out, err), kExitOk);
  if (memfd_noexec < 0) {
    EXPECT_THAT(out.str(), HasSubstr("open: memfd exec (vm.memfd_noexec absent"));
  } else if (memfd_noexec < 2) {
    EXPECT_THAT(out.str(), HasSubstr(absl::StrCat("open: memfd exec (vm.memfd_noexec = ",
                                                  memfd_noexec, ")")));
    EXPECT_THAT(out.str(), HasSubstr("closed by vm.memfd_noexec = 2"));
    EXPECT_THAT(out.str(), HasSubstr("which breaks every memfd_create() without"));
  } else {
    EXPECT_THAT(out.str(), Not(HasSubstr("memfd exec")));
  }
}

TEST(RenderStatus, ShowsTheExecRoutesTheLastPassRead) {
  leash::v1::StatusResponse response;
  leash::v1::ExecRoute* route = response.mutable_last_reconcile()->add_exec_routes();
  route->set_name("memfd exec");
  route->set_open(true);
  route->set_state("vm.memfd_noexec = 0");
  route->set_risk("programs run from a memfd raise no event");
  route->set_closed_by("vm.memfd_noexec = 2");
  route->set_breaks("runc");
  const std::string text = RenderStatus(response);
  EXPECT_THAT(text, HasSubstr("open: memfd exec (vm.memfd_noexec = 0): programs run from a memfd "
                              "raise no event; closed by vm.memfd_noexec = 2, which breaks runc"));
}

TEST(ValidateOffline, JsonCarriesFindingsAndProvenance) {
  const std::string path = WriteConfig("j.yaml", "network: { deny: ['a b'] }\n");
  std::ostringstream out, err;
  EXPECT_EQ(ValidateOffline(ArgsFor(path, {"validate"}, true), out, err), kExitRefused);
  EXPECT_THAT(out.str(), HasSubstr("\"severity\":\"critical\""));
  EXPECT_THAT(out.str(), HasSubstr("\"evaluated_by\":\"offline\""));
}

TEST(ValidateOffline, UnreadableConfigSaysHowToFixIt) {
  std::ostringstream out, err;
  EXPECT_EQ(ValidateOffline(ArgsFor("/nonexistent/leash.yaml", {"validate"}), out, err),
            kExitRefused);
  EXPECT_THAT(err.str(), HasSubstr("leash init --user"));
}

// "Writes and validate disagree": what leashd will not start on, validate calls an error.
TEST(ValidateOffline, WritesAndValidateAgree_AConfigLeashdWillNotStartOnFails) {
  for (const std::string& yaml : {std::string(""), std::string("network: { mode: whitelist }\n")}) {
    const std::string path = WriteConfig("nouser.yaml", yaml);
    std::ostringstream out, err;
    EXPECT_EQ(ValidateOffline(ArgsFor(path, {"validate"}), out, err), kExitRefused) << yaml;
    EXPECT_THAT(out.str(), HasSubstr(absl::StrCat("error    user: ", path,
                                                  " names no user, and leashd does not start")));
  }
  const std::string path = WriteConfig("ghost.yaml", "user: lt-no-such-account\n");
  std::ostringstream out, err;
  EXPECT_EQ(ValidateOffline(ArgsFor(path, {"validate"}), out, err), kExitRefused);
  EXPECT_THAT(out.str(), HasSubstr("the leashed user 'lt-no-such-account' does not exist"));
}

// "Raw gRPC failures leak out": a config over the cap is refused before it is read whole or
// parsed, naming the file, its size and the cap.
TEST(ValidateOffline, RawGrpcFailures_AConfigOverTheCapIsRefusedNamingSizeAndCap) {
  const std::string path = WriteConfig("huge.yaml", std::string((1 << 20) + 1, '#'));
  std::ostringstream out, err;
  EXPECT_EQ(ValidateOffline(ArgsFor(path, {"validate"}), out, err), kExitRefused);
  EXPECT_THAT(err.str(), HasSubstr(absl::StrCat(path,
                                                " is 1048577 bytes, over the 1048576 "
                                                "bytes (1 MiB) a policy file may be")));
}

TEST(Client, RawGrpcFailures_ResourceExhaustedIsASentenceNamingTheCap) {
  Client client("/nonexistent/leash.sock");
  absl::Status said = client.Explain(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                                  "Received message larger than max (5 vs. 4)"));
  EXPECT_EQ(said.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(said.message(), HasSubstr("larger than the admin socket carries"));
  EXPECT_THAT(said.message(), HasSubstr("a policy file may be at most 1048576 bytes (1 MiB)"));
  EXPECT_THAT(said.message(), Not(HasSubstr("answered")));
}

TEST(CheckOffline, ReportsVerdictReasonAndExitCode) {
  const std::string path =
      WriteConfig("ok.yaml", "user: fido\nnetwork: { mode: whitelist, allow: [github.com] }\n");
  std::ostringstream out, err;
  EXPECT_EQ(CheckOffline(ArgsFor(path, {"check", "net", "api.github.com:443"}), out, err),
            kExitOk);
  EXPECT_THAT(out.str(),
              HasSubstr("allow  network: api.github.com:443 matches allow entry 'github.com'  [fido]"));
  std::ostringstream out2;
  EXPECT_EQ(CheckOffline(ArgsFor(path, {"check", "network", "evil.com:443"}), out2, err),
            kExitRefused);
  EXPECT_THAT(out2.str(), HasSubstr("block  network: evil.com:443 not in allow list (whitelist)"));
}

TEST(ValidateOffline, AListThatCannotBeReadIsCriticalAndNamed) {
  const std::string path = WriteConfig(
      "lists.yaml", "user: fido\nfilesystem: { mode: whitelist, allow: ['@no-such-list'] }\n");
  std::stringstream out, err;
  EXPECT_EQ(ValidateOffline(ArgsFor(path, {"validate"}), out, err), kExitRefused);
  EXPECT_THAT(out.str(), ::testing::HasSubstr("/etc/leash/lists/no-such-list"));
}

TEST(CheckOffline, AListThatCannotBeReadDecidesNothing) {
  const std::string path = WriteConfig(
      "lists2.yaml", "user: fido\nfilesystem: { mode: whitelist, allow: ['@no-such-list'] }\n");
  std::stringstream out, err;
  EXPECT_EQ(CheckOffline(ArgsFor(path, {"check", "fs", "/usr/bin/git"}), out, err), kExitRefused);
  EXPECT_THAT(err.str(), ::testing::HasSubstr("no-such-list"));
}

TEST(CheckOffline, BadSubjectIsAUsageError) {
  const std::string path = WriteConfig("u.yaml", "user: fido\n");
  std::ostringstream out, err;
  EXPECT_EQ(CheckOffline(ArgsFor(path, {"check", "network", "github.com"}), out, err), kExitUsage);
  EXPECT_THAT(err.str(), HasSubstr("host:port"));
  EXPECT_EQ(CheckOffline(ArgsFor(path, {"check", "disk", "/x"}), out, err), kExitUsage);
  EXPECT_THAT(err.str(), HasSubstr("unknown surface 'disk'"));
}

TEST(ParseArgs, RejectsUnknownFlagsAndKeepsRepeatedAcks) {
  const char* argv[] = {"leash", "--ack", "network.allow:x", "bind", "--ack=fail_mode:open",
                        "agent:leash-iris", "p"};
  absl::StatusOr<Args> args = ParseArgs(7, argv, nullptr);
  ASSERT_TRUE(args.ok());
  EXPECT_THAT(args->acks, ::testing::ElementsAre("network.allow:x", "fail_mode:open"));
  EXPECT_THAT(args->words, ::testing::ElementsAre("bind", "agent:leash-iris", "p"));
  EXPECT_EQ(args->config_path, "/etc/leash/leash.yaml");
  const char* bad[] = {"leash", "--nope"};
  EXPECT_FALSE(ParseArgs(2, bad, nullptr).ok());
  const char* env[] = {"leash", "validate"};
  EXPECT_EQ(ParseArgs(2, env, "/tmp/x.yaml")->config_path, "/tmp/x.yaml");
}

TEST(ParseArgs, ShortNamesRepeatedSurfacesAndWhoNamedTheConfig) {
  const char* argv[] = {"leash", "-c", "/tmp/c.yaml", "logs", "-f", "--surface", "fs",
                        "--tail=3", "--surface=net", "--ack", "a,b"};
  absl::StatusOr<Args> args = ParseArgs(11, argv, "/tmp/env.yaml");
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(args->config_path, "/tmp/c.yaml");
  EXPECT_TRUE(args->config_named);
  EXPECT_TRUE(args->follow);
  EXPECT_THAT(args->words, ::testing::ElementsAre("logs"));
  EXPECT_THAT(args->acks, ::testing::ElementsAre("a,b"));
  EXPECT_EQ(args->Option("surface"), "fs");
  EXPECT_EQ(args->Option("tail"), "3");
  EXPECT_FALSE(args->HasOption("account"));
  int surfaces = 0;
  for (const auto& [name, value] : args->options) surfaces += name == "surface";
  EXPECT_EQ(surfaces, 2);
  const char* plain[] = {"leash", "status"};
  args = ParseArgs(2, plain, "/tmp/env.yaml");
  EXPECT_EQ(args->config_path, "/tmp/env.yaml");
  EXPECT_TRUE(args->config_named);
  args = ParseArgs(2, plain, "");
  EXPECT_EQ(args->config_path, "/etc/leash/leash.yaml");
  EXPECT_FALSE(args->config_named);
  EXPECT_FALSE(args->follow);
  EXPECT_TRUE(args->acks.empty());
  EXPECT_TRUE(args->options.empty());
  const char* unknown[] = {"leash", "--bogus=1"};
  EXPECT_THAT(ParseArgs(2, unknown, nullptr).status().message(),
              HasSubstr("unknown flag '--bogus=1'; see `leash --help`"));
}

// What reaches leashd must be UTF-8 (protobuf strings); the refusal shows the stray bytes.
// Paths the CLI opens itself may be any bytes.
TEST(ParseArgs, RefusesWhatIsNotUtf8ExceptLocalPaths) {
  const char* word[] = {"leash", "check", "fs", "/srv/name\xff"};
  absl::StatusOr<Args> args = ParseArgs(4, word, nullptr);
  ASSERT_FALSE(args.ok());
  EXPECT_THAT(args.status().message(), HasSubstr("argument '/srv/name\\xff' is not UTF-8"));
  const char* ack[] = {"leash", "--ack", "network.allow:\xfe", "bind", "global", "p"};
  EXPECT_THAT(ParseArgs(6, ack, nullptr).status().message(),
              HasSubstr("--ack 'network.allow:\\xfe' is not UTF-8"));
  const char* account[] = {"leash", "check", "fs", "/x", "--account", "a\xff"};
  EXPECT_FALSE(ParseArgs(6, account, nullptr).ok());
  const char* local[] = {"leash", "--config", "/etc/l\xff" "eash.yaml", "profile", "save", "p",
                         "--from", "/tmp/p\xff.yaml", "--socket=/run/\xff.sock"};
  args = ParseArgs(9, local, nullptr);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(args->config_path, "/etc/l\xff" "eash.yaml");
  const char* valid[] = {"leash", "check", "fs", "/srv/caf\xc3\xa9"};
  EXPECT_TRUE(ParseArgs(4, valid, nullptr).ok());
}

}  // namespace
}  // namespace leash::cli
