#include "controlplane/subordinate_plan.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"

namespace leash::controlplane {
namespace {

using engine::UidRange;

struct Claim {
  UidRange range;
  uint32_t owner;
  bool own_uid;  // the owner's account UID, not a subordinate range
};

std::string Describe(const Claim& claim, const std::map<uint32_t, std::string>& names) {
  if (claim.own_uid) return absl::StrCat(names.at(claim.owner), "'s UID ", claim.range.first);
  return absl::StrCat(names.at(claim.owner), "'s subordinate UIDs ",
                      engine::FormatUidRange(claim.range));
}

}  // namespace

SubordinatePlan PlanSubordinateUids(const std::vector<Account>& subjects,
                                    const std::map<uint32_t, std::vector<UidRange>>& fixed,
                                    const std::vector<Account>& accounts_in_ranges) {
  SubordinatePlan plan;
  std::map<uint32_t, std::string> names;
  std::map<uint32_t, std::vector<UidRange>> wanted;
  for (const Account& subject : subjects) {
    names[subject.uid] = subject.name;
    wanted[subject.uid] = engine::MergeUidRanges(subject.subordinate_uids);
  }
  for (const auto& [uid, ranges] : fixed) {
    if (!names.count(uid)) names[uid] = absl::StrCat("uid ", uid);
    wanted[uid] = engine::MergeUidRanges(ranges);
  }

  // Every claim, sorted; each is compared with those that start inside it.
  std::vector<Claim> claims;
  for (const auto& [uid, ranges] : wanted) {
    claims.push_back({{uid, uid}, uid, true});
    for (const UidRange& range : ranges) claims.push_back({range, uid, false});
  }
  std::sort(claims.begin(), claims.end(), [](const Claim& a, const Claim& b) {
    return std::tie(a.range, a.owner) < std::tie(b.range, b.owner);
  });
  for (size_t i = 0; i < claims.size(); ++i) {
    for (size_t j = i + 1; j < claims.size() && claims[j].range.first <= claims[i].range.last;
         ++j) {
      const Claim& a = claims[i];
      const Claim& b = claims[j];
      if (a.owner == b.owner) continue;  // an account's own UID inside its own range
      const bool a_kept = fixed.count(a.owner) > 0;
      const bool b_kept = fixed.count(b.owner) > 0;
      std::string why;
      if (a_kept || b_kept) {
        const Claim& kept = a_kept ? a : b;
        const Claim& other = a_kept ? b : a;
        why = absl::StrCat(
            Describe(other, names), " overlap UIDs ", engine::FormatUidRange(kept.range),
            " still held by uid ", kept.owner, ", which left discovery: its chain is kept with "
            "them until leashd stops (a process of it may still run as them), so they are not "
            "given to anyone else until then (restart leashd once no process of uid ",
            kept.owner, " runs)");
      } else {
        why = absl::StrCat(
            Describe(a, names), " and ", Describe(b, names),
            " overlap: inside a user namespace each could act as the other, so neither is "
            "enforced until /etc/subuid gives them disjoint ranges (usermod --del-subuids)");
      }
      plan.conflicts[a.owner].push_back(why);
      plan.conflicts[b.owner].push_back(why);
    }
  }

  // Accounts Leash does not confine, inside a subject's ranges.
  std::vector<UidRange> not_subjects;
  for (const Account& account : accounts_in_ranges) {
    if (wanted.count(account.uid)) continue;
    not_subjects.push_back({account.uid, account.uid});
    for (const auto& [uid, ranges] : wanted) {
      for (const UidRange& range : ranges) {
        if (!range.Contains(account.uid)) continue;
        plan.conflicts[uid].push_back(absl::StrCat(
            names[uid], "'s subordinate UIDs ", engine::FormatUidRange(range),
            " hold UID ", account.uid, " of ", account.name,
            ", an account Leash does not confine: inside its own user namespace it could act "
            "as ", account.name, ". Remove that range from /etc/subuid (usermod --del-subuids ",
            engine::FormatUidRange(range), " ", names[uid], ") or move ", account.name));
      }
    }
  }

  // Disjoint sets: own UIDs first, then the fixed ranges, then the rest by ascending UID.
  std::vector<UidRange> taken = not_subjects;
  for (const auto& [uid, ranges] : wanted) taken.push_back({uid, uid});
  auto assign = [&](uint32_t uid) {
    std::vector<UidRange> mine = engine::SubtractUidRanges(wanted[uid], taken);
    taken.insert(taken.end(), mine.begin(), mine.end());
    if (!mine.empty()) plan.ranges[uid] = std::move(mine);
  };
  for (const auto& [uid, ranges] : fixed) assign(uid);
  for (const auto& [uid, ranges] : wanted) {
    if (!fixed.count(uid)) assign(uid);
  }
  return plan;
}

std::map<uint32_t, std::vector<std::string>> SubordinateGidConflicts(
    const std::vector<Account>& subjects, const std::vector<Group>& groups_in_ranges) {
  std::map<uint32_t, std::vector<std::string>> conflicts;
  auto remove = [](const Account& subject, const UidRange& range) {
    return absl::StrCat("usermod --del-subgids ", engine::FormatUidRange(range), " ",
                        subject.name);
  };
  for (const Account& subject : subjects) {
    for (const UidRange& range : subject.subordinate_gids) {
      for (const Group& group : groups_in_ranges) {
        if (!range.Contains(group.gid) || group.gid == subject.gid) continue;
        conflicts[subject.uid].push_back(absl::StrCat(
            subject.name, "'s subordinate GIDs ", engine::FormatUidRange(range), " hold GID ",
            group.gid, " of group ", group.name, ": inside its own user namespace it could act "
            "as that group and reach its files and sockets. Remove the range (", remove(subject, range),
            ") or renumber the group"));
      }
      for (const Account& other : subjects) {
        if (other.uid == subject.uid) continue;
        bool shared = range.Contains(other.gid);
        for (const UidRange& theirs : other.subordinate_gids) shared = shared || range.Overlaps(theirs);
        if (!shared) continue;
        conflicts[subject.uid].push_back(absl::StrCat(
            subject.name, "'s subordinate GIDs ", engine::FormatUidRange(range), " overlap ",
            other.name, "'s GIDs: inside a user namespace each could reach the other's group "
            "files. Give them disjoint ranges (", remove(subject, range), ")"));
      }
    }
  }
  return conflicts;
}

}  // namespace leash::controlplane
