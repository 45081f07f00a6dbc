// Writers racing from separate processes on one profile and its bindings. The one bindings
// writer lock (a flock, so it holds across processes) serialises them:
//  - two profile saves, each appending per-agent consent, lose none of it;
//  - a bind racing a loosening edit of the profile it judged never leaves a subject bound to a
//    loosened profile without consent (bind's re-check under the lock), and a reader sharing
//    the lock never sees such a state either.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "controlplane/policy_store.h"
#include "controlplane/testing/state_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/tiers/invariants.h"

namespace leash {
namespace {

using controlplane::BindingStore;
using controlplane::HostInputs;
using controlplane::WriteOutcome;
using controlplane::testing::Host;
using controlplane::testing::TempStateDir;
using ::testing::IsEmpty;

constexpr char kFloor[] = R"(
user: fido
network: {mode: whitelist, allow: [github.com], deny: [evil.com]}
)";
constexpr int kRounds = 40;

// A child process running `body`, which reports a line on a pipe and returns an exit code.
struct Child {
  pid_t pid = -1;
  int report_fd = -1;
  // Set once reaped.
  bool exited = false;
  int status = 0;
};

Child Spawn(const std::function<int(FILE* report)>& body) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    FILE* report = fdopen(fds[1], "w");
    const int code = body(report);
    fflush(report);
    _exit(code);
  }
  close(fds[1]);
  return {pid, fds[0]};
}

// Waits for `child`; returns its exit code (or -1) and what it reported.
std::pair<int, std::string> Finish(Child& child) {
  std::string report;
  char buffer[256];
  ssize_t n;
  while ((n = read(child.report_fd, buffer, sizeof(buffer))) > 0) report.append(buffer, n);
  close(child.report_fd);
  if (!child.exited) {
    if (waitpid(child.pid, &child.status, 0) != child.pid) return {-1, report};
    child.exited = true;
  }
  if (!WIFEXITED(child.status)) return {-1, report};
  return {WEXITSTATUS(child.status), report};
}

// Whether `child` still runs; reaps it (keeping its status) when it has exited.
bool Running(Child& child) {
  if (child.exited) return false;
  if (waitpid(child.pid, &child.status, WNOHANG) == 0) return true;
  child.exited = true;
  return false;
}

TEST(Concurrency, TwoProfileSavesRacingLoseNoConsent) {
  TempStateDir dir;
  const HostInputs host = Host(kFloor, {"leash-a", "leash-b"});
  {
    BindingStore store{BindingStore::Options(dir.state())};
    ASSERT_TRUE(store.SaveProfile({"web", "network: {allow: [github.com]}\n", {}, "", ""}, host)
                    ->written);
    ASSERT_TRUE(store.Bind("agent:leash-a", "web", {}, host)->written);
    ASSERT_TRUE(store.Bind("agent:leash-b", "web", {}, host)->written);
  }
  auto writer = [&](int w) {
    return Spawn([&, w](FILE* report) {
      BindingStore store{BindingStore::Options(dir.state())};
      for (int i = 0; i < kRounds; ++i) {
        const std::string entry = absl::StrCat("w", w, "-", i, ".example");
        absl::StatusOr<WriteOutcome> outcome = store.SaveProfile(
            {"web", absl::StrCat("network: {allow: [github.com, ", entry, "]}\n"),
             {absl::StrCat("agent:leash-a=network.allow:", entry),
              absl::StrCat("agent:leash-b=network.allow:", entry)},
             "", ""},
            host);
        if (!outcome.ok() || !outcome->written) {
          fprintf(report, "round %d: %s\n", i,
                  outcome.ok() ? outcome->refusal->message().c_str()
                               : std::string(outcome.status().message()).c_str());
          return 1;
        }
      }
      return 0;
    });
  };
  Child one = writer(1);
  Child two = writer(2);
  auto [one_code, one_report] = Finish(one);
  auto [two_code, two_report] = Finish(two);
  ASSERT_EQ(one_code, 0) << one_report;
  ASSERT_EQ(two_code, 0) << two_report;

  // Every token a successful save appended is still on each agent's own binding.
  BindingStore store{BindingStore::Options(dir.state())};
  absl::StatusOr<controlplane::Snapshot> snapshot = store.ReadSnapshot();
  ASSERT_TRUE(snapshot.ok());
  for (const char* scope : {"agent:leash-a", "agent:leash-b"}) {
    const engine::Binding* binding = snapshot->bindings.Find(scope);
    ASSERT_NE(binding, nullptr);
    for (int w = 1; w <= 2; ++w) {
      for (int i = 0; i < kRounds; ++i) {
        EXPECT_THAT(binding->acks, ::testing::Contains(absl::StrCat(
                                       "network.allow:w", w, "-", i, ".example")))
            << scope;
      }
    }
    EXPECT_EQ(binding->acks.size(), 2u * kRounds) << scope;
  }
  EXPECT_THAT(tiers_testing::ConsentViolations(dir.state(), host), IsEmpty());
}

TEST(Concurrency, BindRacingALooseningEditNeverBindsWithoutConsent) {
  TempStateDir dir;
  const HostInputs host = Host(kFloor, {"leash-a", "leash-b"});
  const std::string tight = "network: {allow: [github.com], deny: [evil.com, x.example]}\n";
  const std::string loose =
      "network: {allow: [github.com, openai.com], deny: [evil.com, x.example]}\n";
  {
    BindingStore store{BindingStore::Options(dir.state())};
    ASSERT_TRUE(store.SaveProfile({"web", tight, {}, "", ""}, host)->written);
    ASSERT_TRUE(store.Bind("agent:leash-a", "web", {}, host)->written);
  }
  // The editor loosens web with consent for leash-a only, then tightens it again.
  Child editor = Spawn([&](FILE* report) {
    BindingStore store{BindingStore::Options(dir.state())};
    // Until it has loosened kRounds times (refused while leash-b is bound), capped.
    int loosened = 0;
    for (int i = 0; i < 50 * kRounds && loosened < kRounds; ++i) {
      absl::StatusOr<WriteOutcome> out = store.SaveProfile(
          {"web", loose, {"agent:leash-a=network.allow:openai.com"}, "", ""}, host);
      if (!out.ok()) return 1;
      loosened += out->written;
      if (!store.SaveProfile({"web", tight, {}, "", ""}, host).ok()) return 1;
    }
    fprintf(report, "%d", loosened);
    return 0;
  });
  // The binder binds leash-b with no consent at all, and unbinds it again.
  Child binder = Spawn([&](FILE* report) {
    BindingStore store{BindingStore::Options(dir.state())};
    // Until it has bound kRounds times (refused while web is loose, or changed under it).
    int bound = 0;
    for (int i = 0; i < 50 * kRounds && bound < kRounds; ++i) {
      absl::StatusOr<WriteOutcome> out = store.Bind("agent:leash-b", "web", {}, host);
      if (!out.ok()) return 1;
      if (!out->written) continue;
      ++bound;
      if (!store.Unbind("agent:leash-b", {"unset.deny:network:x.example"}, "test", host).ok()) {
        return 1;
      }
    }
    fprintf(report, "%d", bound);
    return 0;
  });

  // A reader sharing the lock checks the invariant while both run.
  std::vector<std::string> seen;
  int reads = 0;
  while (Running(editor) || Running(binder)) {
    for (std::string& violation : tiers_testing::ConsentViolations(dir.state(), host)) {
      seen.push_back(std::move(violation));
    }
    ++reads;
  }
  auto [editor_code, loosened] = Finish(editor);
  auto [binder_code, bound] = Finish(binder);
  ASSERT_EQ(editor_code, 0);
  ASSERT_EQ(binder_code, 0);
  EXPECT_THAT(seen, IsEmpty()) << "after " << reads << " reads";
  EXPECT_THAT(tiers_testing::ConsentViolations(dir.state(), host), IsEmpty());
  // Both sides did happen: the race was exercised, not avoided.
  int loosened_count = 0, bound_count = 0;
  ASSERT_TRUE(absl::SimpleAtoi(loosened, &loosened_count));
  ASSERT_TRUE(absl::SimpleAtoi(bound, &bound_count));
  EXPECT_GT(loosened_count, 0);
  EXPECT_GT(bound_count, 0);
  EXPECT_GT(reads, 0);
}

}  // namespace
}  // namespace leash
