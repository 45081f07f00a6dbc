// The routing half of "a leashed account never serves a peer off the host": per subject whose
// network.inbound is drop, two policy-routing rules per merged range of its UIDs (its own and
// its subordinate ranges) for any lookup carrying kInboundMark, i.e. a listener's SYN-ACK
// (normal or SYN cookie) and its accepted sockets answering a peer off the host, whether or not
// a process still holds the socket (route_rules.h says why that matters): one that routes it
// into the subject's table, to Leash's ifb device, where the subject's chain counts and drops
// it, and behind it a prohibit, for when that route is missing.
// Loopback peers' packets carry no mark and are served; the subject's own connect() and UDP
// lookups carry no mark either and are untouched.
//
// Plans against RouteRules and diffs against what the kernel holds: adding before deleting, so
// a subject is never without its rules while they change; rules of a subject this leashd has
// not applied yet (after a restart) are kept until it is applied or released; another owner's
// rules are never read back as Leash's. Thread-compatible: leashd calls it from one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controlplane/netfilter.h"
#include "controlplane/route_rules.h"

namespace leash::controlplane {

// The gate and end rules of Leash's block (route_rules.h), IPv4 and IPv6.
std::vector<RouteRule> FrameRouteRules();
// The hull gates for `rules` (Leash's, as listed): per family with refusals, one rule that sends
// a lookup whose UID lies outside every refusal's range (from the lowest first UID to the
// highest last) straight to the end: the host's own services (root, system accounts below the
// agents' UIDs) pay one rule, not one per subject, even for marked lookups.
std::vector<RouteRule> HullGateRouteRules(const std::vector<RouteRule>& rules);
RouteRule HullGateRouteRule(int family, const engine::UidRange& hull);
// `owner`'s refusals for `ranges` (merged here), IPv4 and IPv6: per range the counted one
// (unless `counted` is false or the owner has no table of its own, route_rules.h) and the
// prohibit.
std::vector<RouteRule> RefusalRouteRules(uint32_t owner, const std::vector<engine::UidRange>& ranges,
                                         bool counted = true);
// The refusals `subject` should have: none under network.inbound: allow.
std::vector<RouteRule> DesiredRefusals(const NetfilterSubject& subject, bool counted = true);

struct RouteRuleDiff {
  std::vector<RouteRule> add;
  std::vector<RouteRule> remove;
};
// What turns `present` (Leash's rules as listed) into `desired` for the rules `mine` selects.
template <typename Selector>
RouteRuleDiff DiffRouteRules(const std::vector<RouteRule>& desired,
                             const std::vector<RouteRule>& present, Selector mine) {
  RouteRuleDiff diff;
  for (const RouteRule& rule : desired) {
    bool found = false;
    for (const RouteRule& p : present) found = found || p == rule;
    if (!found) diff.add.push_back(rule);
  }
  std::vector<RouteRule> kept;  // a duplicate of a wanted rule goes too, all but one
  for (const RouteRule& p : present) {
    if (!mine(p)) continue;
    bool wanted = false;
    for (const RouteRule& rule : desired) wanted = wanted || p == rule;
    bool seen = false;
    for (const RouteRule& k : kept) seen = seen || k == p;
    if (wanted && !seen) {
      kept.push_back(p);
    } else {
      diff.remove.push_back(p);
    }
  }
  return diff;
}

// Where leashd keeps the host's own tcp_fwmark_accept under `run_dir` (leashd's runtime folder,
// /run/leash: the sysctl is reset at boot, and so is that folder, so a saved value never
// outlives the setting it saved; a host with no agents gets no /var/lib/leash for it).
// `leash teardown` reads the same file.
std::string SavedFwmarkAcceptPath(const std::string& run_dir);

class InboundRouting {
 public:
  // `saved_sysctl_path`: where the host's own net.ipv4.tcp_fwmark_accept is kept while Leash
  // has set it to 1 (leashd's state folder), so that a release after a restart puts back the
  // host's value and not Leash's. `kernel` is not owned.
  InboundRouting(RouteRules* kernel, std::string saved_sysctl_path);

  // Saves the host's tcp_fwmark_accept (unless a saved value from an earlier run is there),
  // sets it to 1, prepares the refusal device, and adds the gate and end rules if missing
  // (removing any other rule of Leash's at their priorities that is not in their shape).
  // Subjects' rules are kept. Returns the lines to say on stderr: another owner's rule inside
  // Leash's block, which an unmarked lookup would then skip; a device that could not be
  // prepared (every refusal is then the prohibit alone, uncounted).
  absl::StatusOr<std::vector<std::string>> Prepare();

  // Gives `subject` exactly its DesiredRefusals (and its table's route when they are counted,
  // making the refusal device again if it went), replacing whatever rules of its own it has.
  absl::Status Apply(const NetfilterSubject& subject);
  absl::Status ApplyAll(const std::vector<NetfilterSubject>& subjects);

  // Deletes every rule of `uid`'s, and its table's route. None is not an error.
  absl::Status Release(uint32_t uid);

  // A deliberate release of the host: deletes every rule of Leash's and the refusal device, and
  // puts the host's tcp_fwmark_accept back. Every rule is tried even when one fails; the error names each.
  absl::Status ReleaseHost();

 private:
  // Runs `replace` over Leash's rules as listed, which adds at most `adding`, keeping the hull
  // gates no narrower than the refusals throughout, and exact after.
  absl::Status Change(const std::vector<RouteRule>& adding,
                      const std::function<absl::Status(const std::vector<RouteRule>&)>& replace);
  // Turns `owner`'s rules in `present` (Leash's, as listed) into `desired`.
  absl::Status Replace(uint32_t owner, const std::vector<RouteRule>& desired,
                       const std::vector<RouteRule>& present);

  RouteRules* const kernel_;
  const std::string saved_sysctl_path_;
  // Whether Prepare made the refusal device: the refusals are counted.
  bool counted_ = false;
};

}  // namespace leash::controlplane
