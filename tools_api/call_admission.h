// How many CheckTool calls each account may have in flight at once on the tools socket.
//
// gRPC reads a unary request whole before a handler runs, and it enforces a connection's
// SETTINGS_MAX_CONCURRENT_STREAMS only once the client has acknowledged them (gRPC 1.51,
// chttp2 parsing: the *acked* setting), so a client that never acknowledges can open any number
// of calls, each up to the request cap, and leashd would hold them all. ToolsService therefore
// takes each call when its headers arrive, before its message is read, and admits it here: a
// call over its account's share is refused at once, unread, and costs leashd only what the
// stream's flow-control window lets in. Root is never limited: it acts for every account.
//
// Refusals are also counted per account so that the decision log gets one line per account
// every `report_every`, not one per refused call of a caller retrying in a loop.
//
// The share covers a call until its answer goes out; the call itself lives on until gRPC has
// sent it and torn the stream down. A caller that never reads its socket keeps every answered
// or refused call alive (with what its stream window let in), and can open more without end.
// So the calls alive per account are counted too (Opened/Closed, from the headers to gRPC's
// OnDone): past a cap (kLiveCallsPerShare times the share, plus kLiveCallsSlack) the account's
// connections are to be cut, which ends all its calls at once.
//
// A refused call ends at once, so it does not stay alive; a caller that holds its share with
// calls it never finishes and opens call after call is refused without end, and gRPC keeps the
// refusals it cannot write, and the calls it read ahead of their handlers, in memory. So the
// refusals in a row are counted too: past max_alive() of them, with no call admitted in
// between, the account's connections are to be cut. A well-behaved client never gets there:
// its calls are answered in microseconds, and each admitted call starts the count again.
#pragma once

#include <cstdint>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace leash::tools {

// The calls one account may have alive: kLiveCallsPerShare per call of its share, plus
// kLiveCallsSlack, since gRPC runs a finished call's OnDone a little after the caller has its
// answer and may have sent its next call (with a share of 1 and no slack, back-to-back calls
// were cut). An alive call costs about what its stream window lets in.
inline constexpr int kLiveCallsPerShare = 4;
inline constexpr int kLiveCallsSlack = 64;

class CallAdmission {
 public:
  CallAdmission(int max_calls_per_account, absl::Duration report_every);

  // A call of `uid` is alive (its headers arrived): false when that makes more than
  // max_alive() alive, and the account's connections should be cut. Every
  // call is matched by one Closed, cut or not. Root is never over.
  bool Opened(uint32_t uid);
  void Closed(uint32_t uid);
  int Alive(uint32_t uid) const;

  // Counts a call of `uid` in (kAdmitted), or refuses it when the account already has its share
  // in flight: kOverShare, or kOverShareTooOften once more than max_alive() calls of that
  // account were refused in a row (its connections should be cut). Every kAdmitted must be
  // matched by one Release.
  enum class Admission { kAdmitted, kOverShare, kOverShareTooOften };
  Admission Admit(uint32_t uid);
  void Release(uint32_t uid);
  int InFlight(uint32_t uid) const;
  int max_calls_per_account() const { return max_calls_per_account_; }
  int max_alive() const { return kLiveCallsPerShare * max_calls_per_account_ + kLiveCallsSlack; }

  // After a refusal (or a cut): whether it should be reported now (true at most once per
  // account and kind every `report_every`), and how many of that account's went unreported
  // before it.
  enum class Event { kRefused, kCut };
  bool ShouldReport(uint32_t uid, Event event, absl::Time now, uint64_t& unreported);

 private:
  struct Reports {
    absl::Time last = absl::InfinitePast();
    uint64_t unreported = 0;
  };
  struct Account {
    int in_flight = 0;
    int alive = 0;
    int refused_in_a_row = 0;
    Reports refused;
    Reports cut;
  };
  const int max_calls_per_account_;
  const absl::Duration report_every_;
  mutable absl::Mutex mu_;
  std::map<uint32_t, Account> accounts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leash::tools
