#include "test/leashd/agent_fixture.h"

#include <sys/stat.h>

#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace leash::testing {

void AgentTest::MakeHost(const std::string& user_prefix,
                         const std::vector<std::string>& agent_prefixes,
                         const std::string& files_prefix) {
  ASSERT_TRUE(ns_->AddVethPair({"192.0.2.10/24"}, {"192.0.2.11/24"}).ok());
  ASSERT_NE(MountTmpfs(), nullptr);
  user_ = AddAccount(user_prefix + RunTag());
  ASSERT_NE(user_, nullptr);
  for (const std::string& prefix : agent_prefixes) {
    agents_.push_back(AddAccount(prefix + RunTag()));
    ASSERT_NE(agents_.back(), nullptr);
  }
  if (!agents_.empty()) agent_ = agents_.front();
  ASSERT_NE(MakeFiles(files_prefix), nullptr);
}

void AgentTest::MakeViewedHost(const std::string& user, const std::vector<std::string>& agents,
                               const std::string& files_prefix) {
  ASSERT_NE(MountTmpfs(), nullptr);
  ASSERT_NE(MakeAccountView(), nullptr);
  user_ = AddAccount(UniqueAccountName(user), user);
  ASSERT_NE(user_, nullptr);
  for (const std::string& agent : agents) {
    agents_.push_back(AddAccount(UniqueAccountName(agent), agent));
    ASSERT_NE(agents_.back(), nullptr);
  }
  if (!agents_.empty()) agent_ = agents_.front();
  ASSERT_NE(MakeFiles(files_prefix), nullptr);
}

void AgentTest::MakeTree(const std::vector<std::string>& dirs,
                         const std::vector<std::string>& files,
                         const std::vector<std::string>& programs) {
  const std::string& root = fs_->path();
  for (const std::string& dir : dirs) {
    ASSERT_EQ(mkdir((root + dir).c_str(), 0755), 0) << dir;
  }
  for (const std::string& file : files) {
    std::ofstream(root + file) << "text\n";
    ASSERT_EQ(chmod((root + file).c_str(), 0644), 0) << file;
  }
  for (const std::string& program : programs) {
    ASSERT_TRUE(RunOk({"cp", "/bin/true", root + program}).ok()) << program;
    ASSERT_EQ(chmod((root + program).c_str(), 0755), 0) << program;
  }
}

void AgentTest::StartServers(const std::string& script, const std::vector<int>& ports) {
  const std::string path = files_->Join("server.py");
  std::ofstream(path) << script;
  std::vector<std::string> filters;
  for (int port : ports) {
    auto server = Background::Start(
        ns_->ExecSharingMounts({"/usr/bin/python3", path, absl::StrCat(port)}));
    ASSERT_TRUE(server.ok()) << server.status();
    servers_.push_back(*std::move(server));
    filters.push_back(absl::StrCat("sport = :", port));
  }
  ASSERT_TRUE(WaitFor(
      [&] {
        auto listening = ns_->Run({"ss", "-Hltn", absl::StrJoin(filters, " or ")});
        if (!listening.ok()) return false;
        for (int port : ports) {
          if (!absl::StrContains(listening->out, absl::StrCat(":", port))) return false;
        }
        return true;
      },
      absl::Seconds(30)));
}

std::string AgentTest::Floor(const std::string& surfaces) const {
  return absl::StrCat("user: ", user_->name(), "\nfail_mode: closed\n", surfaces,
                      "logging: { level: info, decisions: ", decisions(), " }\n");
}

void AgentTest::StartLeashd(const std::string& floor) {
  auto leashd = LeashdInstance::Start(floor, *ns_, fs_->path(), {}, view_.get());
  ASSERT_TRUE(leashd.ok()) << leashd.status();
  leashd_ = *std::move(leashd);
}

std::string AgentTest::WriteProfile(const std::string& name, const std::string& yaml) const {
  const std::string path = files_->Join(name + ".yaml");
  std::ofstream(path) << yaml;
  return path;
}

RunResult AgentTest::Leash(const std::vector<std::string>& args) {
  auto run = leashd_->Cli(args);
  EXPECT_TRUE(run.ok()) << run.status();
  return run.ok() ? *run : RunResult();
}

std::vector<std::string> AgentTest::LeashArgs(const std::vector<std::string>& args) const {
  return leashd_->CliArgv(args);
}

void AgentTest::LeashAsPrinted(const std::string& command) {
  const std::string line =
      absl::StrCat("cd ", files_->path(), " && ", absl::StrJoin(LeashArgs({}), " "), " ", command);
  auto run = leash::testing::Run({"bash", "-c", line}, absl::Seconds(120));
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->exit_code, 0) << command << "\n" << run->out;
}

int AgentTest::ToolCheck(const std::string& tool, const TestAccount* who) {
  return Leash({"tool", "check", tool, "--account", (who ? who : agent_)->name(),
                "--tools-socket=" + leashd_->tools_socket(), "--inputs", "{}"})
      .exit_code;
}

RunResult AgentTest::AsAgent(const std::string& script, const TestAccount* who) {
  const TestAccount& as = who ? *who : *agent_;
  auto run = leash::testing::Run(
      ns_->ExecSharingMounts(as.AsUser({"/usr/bin/python3", "-c", script})), absl::Seconds(60));
  EXPECT_TRUE(run.ok()) << run.status();
  return run.ok() ? *run : RunResult();
}

std::vector<std::string> AgentTest::AgentLines(size_t from, const std::string& needle) const {
  std::vector<std::string> out;
  const std::string text = ReadAll(decisions());
  const std::string own = absl::StrCat("\"uid\":", agent_->uid(), ",");
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(text).substr(std::min(from, text.size())), '\n',
                      absl::SkipEmpty())) {
    if (absl::StrContains(line, own) && absl::StrContains(line, needle)) out.emplace_back(line);
  }
  return out;
}

std::string AgentTest::WaitForLine(const std::string& path, const std::vector<std::string>& words,
                                   absl::Duration timeout) {
  std::string found;
  WaitFor(
      [&] {
        for (absl::string_view line : absl::StrSplit(ReadAll(path), '\n', absl::SkipEmpty())) {
          bool all = true;
          for (const std::string& w : words) all = all && absl::StrContains(line, w);
          if (all) {
            found = std::string(line);
            return true;
          }
        }
        return false;
      },
      timeout);
  return found;
}

}  // namespace leash::testing
