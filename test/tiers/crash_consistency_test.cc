// Crash consistency of the policy writes. Each write sequence (profile save with per-agent
// consent, bind, bind global, unbind, profile delete) runs in a child process that is killed
// (SIGKILL) at its Nth write step — every step atomic_file passes: open-temp, write-temp,
// fsync-temp, rename, fsync-dir, append, fsync-append, unlink — for every N until the sequence
// completes. After each kill:
//  - every file is byte-for-byte its content before or after the write;
//  - the files that changed are a prefix of the sequence's write order (bindings before the
//    profile on a save; the ledger before the bindings on an unbind);
//  - no binding's subject is loosened beyond its acks ("never a loosened profile beside agents
//    that have not consented"), and a save killed between its two renames leaves consent that
//    leash validate reports stale.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/atomic_file.h"
#include "controlplane/policy_store.h"
#include "controlplane/testing/state_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/tiers/invariants.h"

namespace leash {
namespace {

using controlplane::BindingStore;
using controlplane::HostInputs;
using controlplane::testing::Contents;
using controlplane::testing::Host;
using controlplane::testing::TempStateDir;

constexpr char kFloor[] = R"(
user: fido
network: {mode: whitelist, allow: [github.com], deny: [evil.com]}
commands: {mode: blacklist, deny: [ssh]}
)";
constexpr char kNarrow[] = "network: {allow: [github.com]}\n";
constexpr char kWider[] = "network: {allow: [github.com, openai.com]}\nfail_mode: open\n";
constexpr char kStrict[] = "commands: {deny: [ssh, curl]}\n";

using Step = std::function<bool(BindingStore&, const HostInputs&)>;

struct Scenario {
  std::string name;
  // Run before the write, with no fault injection.
  std::vector<Step> setup;
  // The write under test; returns whether it reported written.
  Step write;
  // The files it changes, relative to the state folder, in the order it must change them.
  std::vector<std::string> write_order;
};

void PrintTo(const Scenario& scenario, std::ostream* os) { *os << scenario.name; }

bool Save(BindingStore& s, const HostInputs& h, const std::string& name, const std::string& yaml,
          std::vector<std::string> acks = {}) {
  absl::StatusOr<controlplane::WriteOutcome> o = s.SaveProfile({name, yaml, acks, "", ""}, h);
  return o.ok() && o->written;
}
bool Bind(BindingStore& s, const HostInputs& h, const std::string& scope,
          const std::string& profile, std::vector<std::string> acks = {}) {
  absl::StatusOr<controlplane::WriteOutcome> o = s.Bind(scope, profile, acks, h);
  return o.ok() && o->written;
}

std::vector<Scenario> Scenarios() {
  return {
      {"SaveProfileWithPerAgentConsent",
       {[](auto& s, auto& h) { return Save(s, h, "web", kNarrow); },
        [](auto& s, auto& h) { return Bind(s, h, "agent:leash-iris", "web"); },
        [](auto& s, auto& h) { return Bind(s, h, "agent:leash-vader", "web"); }},
       [](auto& s, auto& h) {
         return Save(s, h, "web", kWider,
                     {"agent:leash-iris=network.allow:openai.com",
                      "agent:leash-iris=fail_mode:open",
                      "agent:leash-vader=network.allow:openai.com",
                      "agent:leash-vader=fail_mode:open"});
       },
       {"bindings.yaml", "profiles/web.yaml"}},
      {"SaveFirstProfile",
       {},
       [](auto& s, auto& h) { return Save(s, h, "web", kWider); },
       {"profiles/web.yaml"}},
      {"BindWithConsent",
       {[](auto& s, auto& h) { return Save(s, h, "web", kWider); },
        [](auto& s, auto& h) { return Bind(s, h, "agent:leash-vader", "web",
                                           {"network.allow:openai.com", "fail_mode:open"}); }},
       [](auto& s, auto& h) {
         return Bind(s, h, "agent:leash-iris", "web",
                     {"network.allow:openai.com", "fail_mode:open"});
       },
       {"bindings.yaml"}},
      {"BindGlobal",
       {[](auto& s, auto& h) { return Save(s, h, "strict", kStrict); }},
       [](auto& s, auto& h) { return Bind(s, h, "global", "strict"); },
       {"bindings.yaml"}},
      {"UnbindWithConsent",
       {[](auto& s, auto& h) { return Save(s, h, "strict", kStrict); },
        [](auto& s, auto& h) { return Bind(s, h, "agent:leash-iris", "strict"); }},
       [](auto& s, auto& h) {
         absl::StatusOr<controlplane::WriteOutcome> o =
             s.Unbind("agent:leash-iris", {"unset.deny:commands:curl"}, "uid 0", h);
         return o.ok() && o->written;
       },
       {"unbinds.jsonl", "bindings.yaml"}},
      {"DeleteBoundProfile",
       {[](auto& s, auto& h) { return Save(s, h, "strict", kStrict); },
        [](auto& s, auto& h) { return Bind(s, h, "agent:leash-iris", "strict"); }},
       [](auto& s, auto& h) {
         absl::StatusOr<controlplane::WriteOutcome> o =
             s.DeleteProfile("strict", {"dangling:agent:leash-iris"}, h);
         return o.ok() && o->written;
       },
       {"profiles/strict.yaml"}},
  };
}

BindingStore MakeStore(const std::string& state) {
  BindingStore::Options options(state);
  options.now = [] { return absl::FromUnixSeconds(1795000000); };
  return BindingStore(options);
}

std::map<std::string, std::string> Capture(const std::string& state,
                                           const std::vector<std::string>& files) {
  std::map<std::string, std::string> out;
  for (const std::string& file : files) out[file] = Contents(state + "/" + file);
  return out;
}

class CrashConsistency : public ::testing::TestWithParam<Scenario> {
 protected:
  void TearDown() override { base::SetWriteFaultHookForTesting(nullptr); }
  HostInputs host_ = Host(kFloor, {"leash-iris", "leash-vader"});
};

TEST_P(CrashConsistency, KilledAtEveryWriteStepLeavesBeforeOrAfterAndNeverUnconsentedLoosening) {
  const Scenario& scenario = GetParam();

  // The reference run: the state after, and how many write steps the write takes.
  TempStateDir reference;
  std::map<std::string, std::string> after;
  int steps = 0;
  {
    BindingStore store = MakeStore(reference.state());
    for (const Step& step : scenario.setup) ASSERT_TRUE(step(store, host_));
    base::SetWriteFaultHookForTesting(
        [&](absl::string_view, const std::string&) { ++steps; });
    ASSERT_TRUE(scenario.write(store, host_));
    base::SetWriteFaultHookForTesting(nullptr);
    after = Capture(reference.state(), scenario.write_order);
  }
  // A removal passes unlink and fsync-dir; a replacement open-temp ... fsync-dir.
  ASSERT_GE(steps, 2);

  for (int kill_at = 1; kill_at <= steps + 1; ++kill_at) {
    SCOPED_TRACE(absl::StrCat(scenario.name, ": killed at write step ", kill_at, " of ", steps));
    TempStateDir dir;
    {
      BindingStore store = MakeStore(dir.state());
      for (const Step& step : scenario.setup) ASSERT_TRUE(step(store, host_));
    }
    const std::map<std::string, std::string> before = Capture(dir.state(), scenario.write_order);

    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      int calls = 0;
      base::SetWriteFaultHookForTesting([&](absl::string_view, const std::string&) {
        if (++calls == kill_at) raise(SIGKILL);
      });
      BindingStore store = MakeStore(dir.state());
      _exit(scenario.write(store, host_) ? 0 : 3);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    if (kill_at <= steps) {
      ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
    } else {
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
    }

    const std::map<std::string, std::string> now = Capture(dir.state(), scenario.write_order);
    // Each file is before or after; the changed ones are a prefix of the write order.
    bool still_before = false;
    std::vector<std::string> changed;
    for (const std::string& file : scenario.write_order) {
      const bool is_before = now.at(file) == before.at(file);
      const bool is_after = now.at(file) == after.at(file);
      ASSERT_TRUE(is_before || is_after) << file << " is neither before nor after:\n"
                                         << now.at(file);
      if (is_after && !is_before) {
        EXPECT_FALSE(still_before) << file << " changed before an earlier file of the order";
        changed.push_back(file);
      } else {
        still_before = true;
      }
    }
    if (kill_at > steps) {
      EXPECT_EQ(now, after);
    }

    EXPECT_THAT(tiers_testing::ConsentViolations(dir.state(), host_), ::testing::IsEmpty());

    // "a crash between the two renames then leaves consent to a loosening nothing performs
    // yet — inert, and reported stale by leash validate".
    if (scenario.name == "SaveProfileWithPerAgentConsent" && changed.size() == 1) {
      BindingStore store = MakeStore(dir.state());
      absl::StatusOr<std::vector<leash::v1::Finding>> findings = store.Validate(host_);
      ASSERT_TRUE(findings.ok());
      EXPECT_THAT(*findings,
                  ::testing::Contains(::testing::Property(&leash::v1::Finding::message,
                                                          ::testing::HasSubstr("is stale"))));
    }

    // The next writer finds a usable state and sweeps what the killed one left behind.
    BindingStore store = MakeStore(dir.state());
    ASSERT_TRUE(Save(store, host_, "after-crash", "{}\n"));
    EXPECT_EQ(Contents(dir.state() + "/profiles/after-crash.yaml"), "{}\n");
    for (const std::string& folder : {dir.state(), dir.state() + "/profiles"}) {
      for (const auto& entry : std::filesystem::directory_iterator(folder)) {
        EXPECT_THAT(entry.path().filename().string(), ::testing::Not(::testing::HasSubstr(".tmp-")));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Writes, CrashConsistency, ::testing::ValuesIn(Scenarios()),
    [](const ::testing::TestParamInfo<Scenario>& info) { return info.param.name; });

}  // namespace
}  // namespace leash
