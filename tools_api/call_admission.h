// How many CheckTool calls each account may have in flight at once on the tools socket.
//
// gRPC reads a unary request whole before a handler runs, and it enforces a connection's
// SETTINGS_MAX_CONCURRENT_STREAMS only once the client has acknowledged them (gRPC 1.51,
// chttp2 parsing: the *acked* setting), so a client that never acknowledges can open any number
// of calls, each up to the request cap, and leashd would hold them all. ToolsService therefore
// takes each call when its headers arrive, before its message is read, and admits it here: a
// call over its account's share is refused at once, unread, and costs leashd only the stream's
// flow-control window. Root is never limited: it acts for every account.
//
// Refusals are also counted per account so that the decision log gets one line per account
// every `report_every`, not one per refused call of a caller retrying in a loop.
#pragma once

#include <cstdint>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace leash::tools {

class CallAdmission {
 public:
  CallAdmission(int max_calls_per_account, absl::Duration report_every);

  // Counts a call of `uid` in and returns true, or returns false when the account already has
  // its share in flight. Every true must be matched by one Release.
  bool Admit(uint32_t uid);
  void Release(uint32_t uid);
  int InFlight(uint32_t uid) const;
  int max_calls_per_account() const { return max_calls_per_account_; }

  // After a refusal: whether it should be reported now (true at most once per account every
  // `report_every`), and how many refusals of that account went unreported before it.
  bool ShouldReport(uint32_t uid, absl::Time now, uint64_t& unreported);

 private:
  struct Account {
    int in_flight = 0;
    absl::Time last_report = absl::InfinitePast();
    uint64_t unreported = 0;
  };
  const int max_calls_per_account_;
  const absl::Duration report_every_;
  mutable absl::Mutex mu_;
  std::map<uint32_t, Account> accounts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leash::tools
