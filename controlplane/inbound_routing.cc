#include "controlplane/inbound_routing.h"

#include <linux/fib_rules.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <functional>
#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "base/atomic_file.h"
#include "base/read_file.h"
#include "base/status_macros.h"

namespace leash::controlplane {
namespace {

constexpr int kFamilies[] = {AF_INET, AF_INET6};

RouteRule Base(int family, uint32_t priority, uint8_t action) {
  RouteRule rule;
  rule.family = family;
  rule.priority = priority;
  rule.action = action;
  rule.protocol = kLeashRuleProtocol;
  return rule;
}

// The hull gate (route_rules.h) is kept by Apply, not by Prepare.
bool IsHullGate(const RouteRule& rule) {
  return rule.priority == kGatePriority && rule.uids.has_value();
}
// A `nop` at the refusals' priority is the end of an older layout of Leash's block (which
// ended at 3): replaced like any frame rule out of shape.
bool IsFrame(const RouteRule& rule) {
  if (rule.priority == kRefusalPriority) return rule.action == FR_ACT_NOP;
  return (rule.priority == kGatePriority || rule.priority == kEndPriority) && !IsHullGate(rule);
}

// Whether `rule` is one of `owner`'s refusals: its counted refusals look up its own table, its
// prohibits carry its UID; a prohibit at the counted refusals' priority is one of an older
// layout, replaced with the rest.
bool OwnedBy(const RouteRule& rule, uint32_t owner) {
  if (rule.priority == kRoutePriority && rule.action == FR_ACT_TO_TBL) {
    return HasSubjectTable(owner) && rule.table == SubjectTable(owner);
  }
  return (rule.priority == kRefusalPriority || rule.priority == kRoutePriority) &&
         rule.action == FR_ACT_PROHIBIT && rule.table == owner;
}

bool FileExists(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return false;
  std::fclose(f);
  return true;
}

}  // namespace

std::vector<RouteRule> FrameRouteRules() {
  std::vector<RouteRule> rules;
  for (int family : kFamilies) {
    // The end first: a goto to a priority no rule holds would be skipped by the kernel.
    rules.push_back(Base(family, kEndPriority, FR_ACT_NOP));
    RouteRule gate = Base(family, kGatePriority, FR_ACT_GOTO);
    gate.invert = true;
    gate.fwmark = kInboundMark;
    gate.fwmask = kInboundMark;
    gate.goto_target = kEndPriority;
    rules.push_back(gate);
  }
  return rules;
}

RouteRule HullGateRouteRule(int family, const engine::UidRange& hull) {
  RouteRule gate = Base(family, kGatePriority, FR_ACT_GOTO);
  gate.invert = true;
  gate.uids = hull;
  gate.goto_target = kEndPriority;
  return gate;
}

std::vector<RouteRule> HullGateRouteRules(const std::vector<RouteRule>& rules) {
  std::vector<RouteRule> gates;
  for (int family : kFamilies) {
    std::optional<engine::UidRange> hull;
    for (const RouteRule& rule : rules) {
      // The counted refusals' ranges are the prohibits'; an older layout's prohibits sit at 2.
      const bool refusal = rule.priority == kRefusalPriority || rule.priority == kRoutePriority;
      if (rule.family != family || !refusal || !rule.uids) continue;
      if (!hull) hull = *rule.uids;
      hull->first = std::min(hull->first, rule.uids->first);
      hull->last = std::max(hull->last, rule.uids->last);
    }
    if (hull) gates.push_back(HullGateRouteRule(family, *hull));
  }
  return gates;
}

std::vector<RouteRule> RefusalRouteRules(uint32_t owner, const std::vector<engine::UidRange>& ranges,
                                         bool counted) {
  std::vector<RouteRule> rules;
  for (int family : kFamilies) {
    for (const engine::UidRange& range : engine::MergeUidRanges(ranges)) {
      if (counted && HasSubjectTable(owner)) {
        RouteRule route = Base(family, kRoutePriority, FR_ACT_TO_TBL);
        route.fwmark = kInboundMark;
        route.fwmask = kInboundMark;
        route.uids = range;
        route.table = SubjectTable(owner);
        rules.push_back(route);
      }
      // Prohibit rather than blackhole: the listener's lookup fails with EACCES, and the kernel
      // drops the request (no SYN-ACK) or the child's segment, counting IpOutNoRoutes.
      RouteRule rule = Base(family, kRefusalPriority, FR_ACT_PROHIBIT);
      rule.fwmark = kInboundMark;
      rule.fwmask = kInboundMark;
      rule.uids = range;
      rule.table = owner;
      rules.push_back(rule);
    }
  }
  return rules;
}

std::vector<RouteRule> DesiredRefusals(const NetfilterSubject& subject, bool counted) {
  if (subject.inbound_allowed) return {};
  return RefusalRouteRules(subject.uid, DispatchedUids(subject), counted);
}

std::string DescribeRouteRule(const RouteRule& rule) {
  std::string out = absl::StrCat(rule.family == AF_INET6 ? "ipv6 " : "ipv4 ", rule.priority, ":");
  if (rule.invert) absl::StrAppend(&out, " not");
  if (rule.fwmask != 0) {
    absl::StrAppend(&out, " fwmark 0x", absl::Hex(rule.fwmark), "/0x", absl::Hex(rule.fwmask));
  }
  if (rule.uids) absl::StrAppend(&out, " uidrange ", rule.uids->first, "-", rule.uids->last);
  switch (rule.action) {
    case FR_ACT_GOTO: absl::StrAppend(&out, " goto ", rule.goto_target); break;
    case FR_ACT_NOP: absl::StrAppend(&out, " nop"); break;
    case FR_ACT_PROHIBIT: absl::StrAppend(&out, " prohibit"); break;
    case FR_ACT_TO_TBL: absl::StrAppend(&out, " lookup ", rule.table); break;
    default: absl::StrAppend(&out, " action ", rule.action); break;
  }
  if (rule.action == FR_ACT_TO_TBL) {
    absl::StrAppend(&out, " (subject ", rule.table & ~kSubjectTableBit, ")");
  } else if (rule.table != 0) {
    absl::StrAppend(&out, " (subject ", rule.table, ")");
  }
  return out;
}

std::string SavedFwmarkAcceptPath(const std::string& run_dir) {
  return run_dir + "/tcp_fwmark_accept.saved";
}

InboundRouting::InboundRouting(RouteRules* kernel, std::string saved_sysctl_path)
    : kernel_(kernel), saved_sysctl_path_(std::move(saved_sysctl_path)) {}

absl::StatusOr<std::vector<std::string>> InboundRouting::Prepare() {
  // The host's value is saved before it is changed, and a saved value is never overwritten: a
  // leashd that restarts reads Leash's 1, not the host's.
  if (!FileExists(saved_sysctl_path_)) {
    ASSIGN_OR_RETURN(const int host_value, kernel_->ReadFwmarkAccept());
    // The state folder may not exist yet on a first start (the reconcile makes it later).
    const std::string dir = saved_sysctl_path_.substr(0, saved_sysctl_path_.find_last_of('/'));
    if (!dir.empty() && mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return absl::ErrnoToStatus(errno, absl::StrCat("mkdir ", dir));
    }
    RETURN_IF_ERROR(base::WriteFileAtomically(saved_sysctl_path_, absl::StrCat(host_value, "\n")));
  }
  RETURN_IF_ERROR(kernel_->WriteFwmarkAccept(1));
  std::vector<std::string> lines;
  // Without the device every refusal is still made, by the prohibits alone, uncounted.
  const absl::Status device = kernel_->PrepareRefusalDevice();
  counted_ = device.ok();
  if (!device.ok()) {
    lines.push_back(absl::StrCat(
        "warning: inbound refusals at the route lookup are not counted (`leash status` shows "
        "no TCP listener's refused answers to peers off the host; they are still refused): ",
        device.message()));
  }
  ASSIGN_OR_RETURN(const std::vector<RouteRule> present, kernel_->ListOwn());
  const RouteRuleDiff diff = DiffRouteRules(FrameRouteRules(), present, IsFrame);
  for (const RouteRule& rule : diff.add) RETURN_IF_ERROR(kernel_->Add(rule));
  for (const RouteRule& rule : diff.remove) RETURN_IF_ERROR(kernel_->Delete(rule));
  ASSIGN_OR_RETURN(std::vector<uint32_t> others, kernel_->OtherPriorities());
  std::sort(others.begin(), others.end());
  others.erase(std::unique(others.begin(), others.end()), others.end());
  for (uint32_t priority : others) {
    if (priority >= kGatePriority && priority <= kEndPriority) {
      lines.push_back(absl::StrCat(
          "warning: another owner's policy-routing rule sits at priority ", priority,
          ", inside Leash's block ", kGatePriority, "-", kEndPriority,
          " (`ip rule show`): Leash's gates jump over it (to ", kEndPriority,
          ") for every lookup they let pass; move that rule to another priority"));
    }
  }
  return lines;
}

absl::Status InboundRouting::Replace(uint32_t owner, const std::vector<RouteRule>& desired,
                                     const std::vector<RouteRule>& present) {
  const RouteRuleDiff diff = DiffRouteRules(
      desired, present, [owner](const RouteRule& rule) { return OwnedBy(rule, owner); });
  const bool counted = std::any_of(desired.begin(), desired.end(), [](const RouteRule& rule) {
    return rule.action == FR_ACT_TO_TBL;
  });
  // The table's route before the rules that look there (a rule that finds no route there goes
  // on to the prohibit anyway), the new rules before the old go: the subject is never without
  // a refusal while it changes.
  if (counted) {
    for (int family : kFamilies) {
      absl::Status added = kernel_->AddRefusalRoute(family, owner);
      if (!added.ok()) {
        // The device went since Prepare (deleted, or down, which takes its routes): made again
        // once. The other subjects' routes come back with their next apply; until then their
        // lookups end at the prohibit.
        RETURN_IF_ERROR(kernel_->PrepareRefusalDevice());
        added = kernel_->AddRefusalRoute(family, owner);
      }
      RETURN_IF_ERROR(added);
    }
  }
  for (const RouteRule& rule : diff.add) RETURN_IF_ERROR(kernel_->Add(rule));
  for (const RouteRule& rule : diff.remove) RETURN_IF_ERROR(kernel_->Delete(rule));
  if (!counted && HasSubjectTable(owner)) {
    for (int family : kFamilies) RETURN_IF_ERROR(kernel_->DeleteRefusalRoute(family, owner));
  }
  return absl::OkStatus();
}

absl::Status InboundRouting::Change(
    const std::vector<RouteRule>& adding,
    const std::function<absl::Status(const std::vector<RouteRule>&)>& replace) {
  ASSIGN_OR_RETURN(const std::vector<RouteRule> present, kernel_->ListOwn());
  // A hull gate narrower than a refusal would let a lookup skip it: a gate that does not cover
  // every refusal there will be during the change goes first (without one a lookup walks every
  // refusal: slower, never open). A failure below leaves it out until the next change.
  std::vector<RouteRule> during = present;
  during.insert(during.end(), adding.begin(), adding.end());
  const std::vector<RouteRule> needed = HullGateRouteRules(during);
  for (const RouteRule& rule : present) {
    if (!IsHullGate(rule)) continue;
    bool covers = true;
    for (const RouteRule& gate : needed) {
      if (gate.family == rule.family) {
        covers = rule.uids->first <= gate.uids->first && gate.uids->last <= rule.uids->last;
      }
    }
    if (!covers) RETURN_IF_ERROR(kernel_->Delete(rule));
  }
  RETURN_IF_ERROR(replace(present));
  // The exact gates for the refusals now there; each covers them all, so adding before
  // deleting the wider ones is safe.
  ASSIGN_OR_RETURN(const std::vector<RouteRule> after, kernel_->ListOwn());
  const RouteRuleDiff diff = DiffRouteRules(HullGateRouteRules(after), after, IsHullGate);
  for (const RouteRule& rule : diff.add) RETURN_IF_ERROR(kernel_->Add(rule));
  for (const RouteRule& rule : diff.remove) RETURN_IF_ERROR(kernel_->Delete(rule));
  return absl::OkStatus();
}

absl::Status InboundRouting::Apply(const NetfilterSubject& subject) {
  return ApplyAll({subject});
}

absl::Status InboundRouting::ApplyAll(const std::vector<NetfilterSubject>& subjects) {
  std::vector<RouteRule> adding;
  for (const NetfilterSubject& subject : subjects) {
    for (const RouteRule& rule : DesiredRefusals(subject, counted_)) adding.push_back(rule);
  }
  // One listing for all: each subject's diff touches only its own rules.
  return Change(adding, [&](const std::vector<RouteRule>& present) {
    for (const NetfilterSubject& subject : subjects) {
      RETURN_IF_ERROR(Replace(subject.uid, DesiredRefusals(subject, counted_), present));
    }
    return absl::OkStatus();
  });
}

absl::Status InboundRouting::Release(uint32_t uid) {
  return Change({}, [&](const std::vector<RouteRule>& present) {
    return Replace(uid, {}, present);
  });
}

absl::Status InboundRouting::ReleaseHost() {
  std::vector<std::string> failures;
  absl::StatusOr<std::vector<RouteRule>> present = kernel_->ListOwn();
  if (!present.ok()) {
    failures.push_back(std::string(present.status().message()));
  } else {
    for (const RouteRule& rule : *present) {
      if (absl::Status s = kernel_->Delete(rule); !s.ok()) {
        failures.push_back(absl::StrCat(DescribeRouteRule(rule), ": ", s.message()));
      }
    }
  }
  // The device goes with every route through it.
  if (absl::Status s = kernel_->DeleteRefusalDevice(); !s.ok()) {
    failures.push_back(std::string(s.message()));
  }
  absl::StatusOr<std::string> saved = base::ReadFile(saved_sysctl_path_);
  int host_value = 0;
  if (saved.ok() && absl::SimpleAtoi(absl::StripAsciiWhitespace(*saved), &host_value)) {
    if (absl::Status s = kernel_->WriteFwmarkAccept(host_value); !s.ok()) {
      failures.push_back(std::string(s.message()));
    } else if (absl::Status r = base::RemoveFileDurably(saved_sysctl_path_); !r.ok()) {
      failures.push_back(std::string(r.message()));
    }
  } else if (saved.ok()) {
    failures.push_back(absl::StrCat(saved_sysctl_path_, " holds no number (\"", *saved,
                                    "\"); set net.ipv4.tcp_fwmark_accept by hand"));
  }
  if (failures.empty()) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("releasing Leash's policy-routing rules: ",
                                          absl::StrJoin(failures, "; ")));
}

}  // namespace leash::controlplane
