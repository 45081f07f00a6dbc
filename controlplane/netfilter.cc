// NetfilterSubject validation (declared in netfilter.h): every Netfilter validates a subject
// the same way before touching the kernel.
#include "controlplane/netfilter.h"

#include "absl/strings/str_cat.h"

namespace leash::controlplane {

absl::Status ValidateNetfilterSubject(const NetfilterSubject& subject) {
  if (subject.uid == 0) {
    return absl::InvalidArgumentError(
        "refusing to leash UID 0 (root): its redirect would send leashd's and leash-proxy's own "
        "connections into the proxy; leash an agent account instead");
  }
  // Only a port inside the reserved range is safe: loopback is exempt from the redirect
  // everywhere else, so another agent could reach a listener outside it directly.
  // Port 0 is the refuse-all chain of a subject that has no port: nothing is redirected.
  if (subject.port == 0 && !subject.refuse_tcp) {
    return absl::InvalidArgumentError(absl::StrCat(
        "UID ", subject.uid, " has no proxy port and its chain does not refuse its TCP: with "
        "nothing to redirect to, only a refuse-all chain is safe"));
  }
  if (subject.port != 0 && (subject.port < kProxyPortFirst || subject.port > kProxyPortLast)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "UID ", subject.uid, " has proxy port ", subject.port, ", outside the reserved range ",
        kProxyPortFirst, "-", kProxyPortLast, "; the port map assigns ports in that range"));
  }
  // Root inside a subordinate range would be the same mistake by another route.
  for (const engine::UidRange& range : subject.subordinate_uids) {
    if (range.Contains(0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "UID ", subject.uid, "'s subordinate range ", engine::FormatUidRange(range),
          " holds UID 0 (root); remove it from /etc/subuid"));
    }
  }
  return absl::OkStatus();
}

std::vector<engine::UidRange> DispatchedUids(const NetfilterSubject& subject) {
  std::vector<engine::UidRange> uids = subject.subordinate_uids;
  uids.push_back({subject.uid, subject.uid});
  return engine::MergeUidRanges(std::move(uids));
}

}  // namespace leash::controlplane
