// A stateful stand-in for the kernel's per-UID chains, for unit tests of the logic above the
// Netfilter interface (reconcile, startup, teardown). It keeps what a real Netfilter would leave
// in the kernel (UID -> subject), records every call with its arguments in order, and fails on
// demand per UID. It mirrors the real implementation's contract: Apply before Prepare is
// FailedPrecondition, invalid subjects are InvalidArgument, ApplyAll is all-or-nothing, Release
// of an absent UID is OK. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "controlplane/netfilter.h"

namespace leash::controlplane::testing {

// A subject for tests: NetfilterSubject has no constructor, and -Wextra rejects partial
// designated initializers.
NetfilterSubject MakeSubject(uint32_t uid, uint16_t port, bool udp_allowed = false,
                             std::vector<engine::IpAddress> dns_resolvers = {});

// "uid=1001 port=18001 udp=drop dns=[10.0.0.53]" (" inbound=allow" appended when it is).
std::string SubjectToString(const NetfilterSubject& subject);

class FakeNetfilter : public Netfilter {
 public:
  struct Call {
    enum class Kind { kPrepare, kApply, kApplyAll, kRelease, kListSubjects };
    Kind kind;
    std::vector<NetfilterSubject> subjects;  // Apply: the one; ApplyAll: all, in order
    uint32_t uid = 0;                        // Release
    // "Prepare()", "Apply(uid=1001 port=18001 udp=drop dns=[])", "ApplyAll(...; ...)",
    // "Release(1001)", "ListSubjects()".
    std::string ToString() const;
  };

  FakeNetfilter() = default;

  // Netfilter. Every call is logged first, then fails if a failure was injected for it.
  absl::StatusOr<std::vector<std::string>> Prepare() override;
  absl::Status Apply(const NetfilterSubject& subject) override;
  absl::Status ApplyAll(const std::vector<NetfilterSubject>& subjects) override;
  absl::Status Release(uint32_t uid) override;
  absl::StatusOr<std::vector<uint32_t>> ListSubjects() override;
  // What SetCounters gave the UID (zeros if nothing); NotFound for a UID with no chain. Not
  // recorded in calls(): status reads it, and it changes nothing.
  absl::StatusOr<NetfilterCounters> ReadCounters(uint32_t uid) override;
  std::string Describe() const override { return "fake netfilter"; }

  // --- Inspection ---
  // What is "in the kernel" now, by UID.
  std::map<uint32_t, NetfilterSubject> subjects() const;
  bool prepared() const;
  std::vector<Call> calls() const;
  std::vector<std::string> CallStrings() const;
  // Calls of one kind only, e.g. every Apply since the last ClearCalls().
  std::vector<Call> CallsOf(Call::Kind kind) const;
  void ClearCalls();

  // --- Setup ---
  // State left by a previous run (marks the fake prepared, as the tables would exist).
  void Seed(const NetfilterSubject& subject);
  // What ReadCounters reports for `uid` while it has a chain.
  void SetCounters(uint32_t uid, NetfilterCounters counters);
  // Lines the next successful Prepare returns (a simulated old-shape table being dropped).
  void SetPrepareLines(std::vector<std::string> lines);

  // --- Failure injection. `times` < 0: every time until cleared. ---
  // Apply(uid), or an ApplyAll that includes uid (which then changes nothing), fails. Without
  // injection an apply takes the UIDs it claims from any other subject's ranges, as
  // NftNetfilter deletes a stale overlapping interval in the same batch.
  void FailApply(uint32_t uid, absl::Status status, int times = -1);
  void FailRelease(uint32_t uid, absl::Status status, int times = -1);
  void FailPrepare(absl::Status status, int times = -1);
  void FailListSubjects(absl::Status status, int times = -1);
  void ClearFailures();
  // Called with each subject just before Apply/ApplyAll records it (outside the fake's lock),
  // so a test can check what else was true at that moment (e.g. the watcher's map).
  void SetBeforeApply(std::function<void(const NetfilterSubject&)> hook);

 private:
  // Removes the UIDs `incoming` claims from every other subject's subordinate ranges.
  void DropStaleClaims(const std::vector<NetfilterSubject>& incoming)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  struct Failure {
    absl::Status status;
    int times = -1;
  };
  // Consumes one use of the failure in `failures` for `key`, if any.
  static absl::Status TakeFailure(std::map<uint32_t, Failure>& failures, uint32_t key);

  mutable absl::Mutex mu_;
  std::function<void(const NetfilterSubject&)> before_apply_;
  bool prepared_ ABSL_GUARDED_BY(mu_) = false;
  std::map<uint32_t, NetfilterSubject> subjects_ ABSL_GUARDED_BY(mu_);
  std::vector<Call> calls_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> prepare_lines_ ABSL_GUARDED_BY(mu_);
  std::map<uint32_t, NetfilterCounters> counters_ ABSL_GUARDED_BY(mu_);
  std::map<uint32_t, Failure> apply_failures_ ABSL_GUARDED_BY(mu_);
  std::map<uint32_t, Failure> release_failures_ ABSL_GUARDED_BY(mu_);
  // Keyed 0: Prepare and ListSubjects take no UID.
  std::map<uint32_t, Failure> prepare_failure_ ABSL_GUARDED_BY(mu_);
  std::map<uint32_t, Failure> list_failure_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leash::controlplane::testing
