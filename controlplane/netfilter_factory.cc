#include "controlplane/netfilter_factory.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controlplane/iptables_netfilter.h"
#include "controlplane/nft_netfilter.h"

namespace leash::controlplane {
namespace {

std::string FallbackLimits(const IptablesNetfilter& fallback) {
  return absl::StrCat(
      "the iptables fallback (", fallback.command(),
      ") covers IPv4 TCP only: IPv6 TCP is not redirected to the proxy and its inbound service "
      "(network.inbound) is not dropped, and UDP is not dropped; and it enforces a single UID, "
      "refusing a second. This is not parity with nftables.");
}

}  // namespace

absl::StatusOr<NetfilterChoice> ChooseNetfilter(NetfilterBackend backend,
                                                const std::string& iptables_command) {
  NetfilterChoice choice;
  absl::Status nft_status = absl::OkStatus();
  if (backend != NetfilterBackend::kIptables) {
    absl::StatusOr<std::unique_ptr<NftNetfilter>> nft = NftNetfilter::Create();
    if (nft.ok()) {
      choice.netfilter = std::move(*nft);
      return choice;
    }
    if (backend == NetfilterBackend::kNftables) return nft.status();
    nft_status = nft.status();
  }
  absl::StatusOr<std::unique_ptr<IptablesNetfilter>> fallback =
      IptablesNetfilter::Create(iptables_command);
  if (!fallback.ok()) {
    if (backend == NetfilterBackend::kIptables) return fallback.status();
    return absl::UnavailableError(
        absl::StrCat("no way to enforce the network surface: nftables: ", nft_status.message(),
                     "; iptables fallback: ", fallback.status().message()));
  }
  choice.notice =
      backend == NetfilterBackend::kIptables
          ? absl::StrCat("leash: using the iptables fallback as configured; ",
                         FallbackLimits(**fallback))
          : absl::StrCat("leash: nftables is unavailable (", nft_status.message(),
                         "); falling back to iptables. ", FallbackLimits(**fallback));
  choice.fallback = fallback->get();
  choice.netfilter = std::move(*fallback);
  choice.single_uid_fallback = true;
  choice.fallback_reason =
      backend == NetfilterBackend::kIptables
          ? std::string("the iptables fallback is configured (--netfilter=iptables)")
          : absl::StrCat("nftables is unavailable (", nft_status.message(), ")");
  return choice;
}

absl::Status CheckEnforcesEverySubject(const NetfilterChoice& choice, const std::string& user,
                                       const std::vector<std::string>& agents) {
  if (!choice.single_uid_fallback || agents.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "enforcing several UIDs needs nftables, and ", choice.fallback_reason,
      ". This host has ", agents.size(), " agent account(s) (", absl::StrJoin(agents, ", "),
      ") besides the configured user ", user,
      ", and the iptables fallback enforces a single UID: it appends into the built-in nat "
      "OUTPUT chain, which cannot express a per-UID dispatch, so it will not apply one "
      "account's policy to all of them or leave the others unconfined. Make nf_tables "
      "available (modprobe nf_tables, or a kernel with CONFIG_NF_TABLES) and start leash "
      "again"));
}

absl::Status TeardownSubjects(Netfilter& netfilter, const std::vector<uint32_t>& uids) {
  std::vector<std::string> failures;
  absl::StatusCode first_code = absl::StatusCode::kOk;
  for (uint32_t uid : uids) {
    absl::Status released = netfilter.Release(uid);
    if (released.ok()) continue;
    if (first_code == absl::StatusCode::kOk) first_code = released.code();
    failures.push_back(absl::StrCat("UID ", uid, ": ", released.message()));
  }
  if (failures.empty()) return absl::OkStatus();
  return absl::Status(first_code,
                      absl::StrCat("teardown left ", failures.size(), " of ", uids.size(),
                                   " subject(s) enforced (", netfilter.Describe(), "): ",
                                   absl::StrJoin(failures, "; ")));
}

}  // namespace leash::controlplane
