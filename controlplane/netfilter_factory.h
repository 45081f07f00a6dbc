// What leashd calls at start and stop: choose the Netfilter (nftables, or the iptables fallback
// when nf_tables does not answer) with the line to say on stderr, and release every subject
// (`leash teardown`, run by the unit's ExecStopPost).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controlplane/iptables_netfilter.h"
#include "controlplane/netfilter.h"

namespace leash::controlplane {

enum class NetfilterBackend {
  kAuto,      // nftables; the iptables fallback only when nf_tables does not answer
  kNftables,  // nftables or an error
  kIptables,  // the fallback, by choice (tests, or an operator who wants it)
};

struct NetfilterChoice {
  std::unique_ptr<Netfilter> netfilter;
  // The line to print on stderr, or empty. Non-empty whenever the fallback is in use: it is
  // not parity with nftables and the operator must not assume it is.
  std::string notice;
  // Whether `netfilter` is the iptables fallback, which enforces one UID only; and why (the
  // nf_tables error, or that it was configured).
  bool single_uid_fallback = false;
  std::string fallback_reason;
  // `netfilter` as the fallback (not owned), for closing the UIDs it cannot enforce; null with
  // nftables.
  IptablesNetfilter* fallback = nullptr;
};

// Whether `choice` can enforce the configured user `user` and the agent accounts `agents`
// together. OK with nftables, or with the fallback on a host without agent accounts (the one
// UID it can enforce). Otherwise FailedPrecondition naming nftables, why it is not in use, and
// every agent: enforcing several UIDs refuses to run without nft rather than quietly applying
// one user's policy to all of them (docs/ARCHITECTURE.md, rule N13).
absl::Status CheckEnforcesEverySubject(const NetfilterChoice& choice, const std::string& user,
                                       const std::vector<std::string>& agents);

// Builds the Netfilter for the calling thread's network namespace. With kAuto, an nf_tables
// that does not answer falls back to iptables (`iptables_command`, empty for the default) and
// says why; Unavailable when neither can be used, naming both reasons.
absl::StatusOr<NetfilterChoice> ChooseNetfilter(NetfilterBackend backend = NetfilterBackend::kAuto,
                                                const std::string& iptables_command = "");

// Releases each of `uids` (the port map's UIDs), carrying on past failures so one bad UID does
// not leave the others enforced after the service stopped. OK when every release succeeded;
// otherwise an error of the first failure's code that names every UID that failed and why.
absl::Status TeardownSubjects(Netfilter& netfilter, const std::vector<uint32_t>& uids);

}  // namespace leash::controlplane
