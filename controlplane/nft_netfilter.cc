#include "controlplane/nft_netfilter.h"

#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/gen.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include <endian.h>

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace leash::controlplane {
namespace {

using nft::LeashTable;

template <typename T, void (*Free)(const T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using TablePtr = std::unique_ptr<nftnl_table, Deleter<nftnl_table, nftnl_table_free>>;
using ChainPtr = std::unique_ptr<nftnl_chain, Deleter<nftnl_chain, nftnl_chain_free>>;
using RulePtr = std::unique_ptr<nftnl_rule, Deleter<nftnl_rule, nftnl_rule_free>>;
using SetPtr = std::unique_ptr<nftnl_set, Deleter<nftnl_set, nftnl_set_free>>;
using GenPtr = std::unique_ptr<nftnl_gen, Deleter<nftnl_gen, nftnl_gen_free>>;

const std::vector<LeashTable>& Tables() { return nft::LeashTables(); }

SetPtr MapNamed(const LeashTable& table) {
  SetPtr set(nftnl_set_alloc());
  nftnl_set_set_u32(set.get(), NFTNL_SET_FAMILY, table.family);
  nftnl_set_set_str(set.get(), NFTNL_SET_TABLE, table.name);
  nftnl_set_set_str(set.get(), NFTNL_SET_NAME, nft::kAgentsMap);
  return set;
}

absl::Status ParseError(const std::string& what) {
  return absl::InternalError(absl::StrCat("cannot parse the kernel's ", what, " message"));
}

// Keys of the agents map are big-endian UIDs (an interval map); read back in host order.
absl::Status CollectElements(const nlmsghdr* h, std::vector<nft::DumpedElement>& elements) {
  SetPtr set(nftnl_set_alloc());
  if (nftnl_set_elems_nlmsg_parse(h, set.get()) < 0) return ParseError("set element");
  nftnl_set_elems_iter* it = nftnl_set_elems_iter_create(set.get());
  for (nftnl_set_elem* e = nftnl_set_elems_iter_next(it); e != nullptr;
       e = nftnl_set_elems_iter_next(it)) {
    uint32_t len = 0;
    const void* key = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &len);
    if (key == nullptr || len != sizeof(uint32_t)) continue;
    nft::DumpedElement element;
    uint32_t big_endian = 0;
    std::memcpy(&big_endian, key, sizeof(big_endian));
    element.key = be32toh(big_endian);
    element.interval_end = nftnl_set_elem_is_set(e, NFTNL_SET_ELEM_FLAGS) &&
                           (nftnl_set_elem_get_u32(e, NFTNL_SET_ELEM_FLAGS) &
                            NFT_SET_ELEM_INTERVAL_END) != 0;
    if (nftnl_set_elem_is_set(e, NFTNL_SET_ELEM_CHAIN)) {
      element.jump_chain = nftnl_set_elem_get_str(e, NFTNL_SET_ELEM_CHAIN);
    }
    elements.push_back(std::move(element));
  }
  nftnl_set_elems_iter_destroy(it);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<NftNetfilter>> NftNetfilter::Create() {
  ASSIGN_OR_RETURN(std::unique_ptr<NftSocket> socket, NftSocket::Open());
  // The ruleset generation is the cheapest question nf_tables answers; if it cannot answer
  // (module missing, netlink filtered), nothing else will work either.
  absl::Status probe = socket->Request(
      NFT_MSG_GETGEN, NFPROTO_UNSPEC, /*dump=*/false, [](nlmsghdr*) {},
      [](const nlmsghdr*) { return absl::OkStatus(); });
  if (!probe.ok()) {
    return absl::UnavailableError(
        absl::StrCat("nf_tables does not answer over netlink: ", probe.message()));
  }
  return std::unique_ptr<NftNetfilter>(new NftNetfilter(std::move(socket)));
}

absl::StatusOr<bool> NftNetfilter::TableExists(const LeashTable& table) {
  TablePtr request(nftnl_table_alloc());
  nftnl_table_set_str(request.get(), NFTNL_TABLE_NAME, table.name);
  absl::Status s = socket_->Request(
      NFT_MSG_GETTABLE, table.family, /*dump=*/false,
      [&](nlmsghdr* h) { nftnl_table_nlmsg_build_payload(h, request.get()); },
      [](const nlmsghdr*) { return absl::OkStatus(); });
  if (absl::IsNotFound(s)) return false;
  if (!s.ok()) return s;
  return true;
}

absl::StatusOr<nft::TableSnapshot> NftNetfilter::ReadTable(const LeashTable& table) {
  nft::TableSnapshot snapshot;
  SetPtr set_request(nftnl_set_alloc());
  nftnl_set_set_str(set_request.get(), NFTNL_SET_TABLE, table.name);
  RETURN_IF_ERROR(socket_->Request(
      NFT_MSG_GETSET, table.family, /*dump=*/true,
      [&](nlmsghdr* h) { nftnl_set_nlmsg_build_payload(h, set_request.get()); },
      [&](const nlmsghdr* h) {
        SetPtr set(nftnl_set_alloc());
        if (nftnl_set_nlmsg_parse(h, set.get()) < 0) return ParseError("set");
        if (std::strcmp(nftnl_set_get_str(set.get(), NFTNL_SET_TABLE), table.name) != 0) {
          return absl::OkStatus();
        }
        snapshot.sets.push_back({nftnl_set_get_str(set.get(), NFTNL_SET_NAME),
                                 nftnl_set_get_u32(set.get(), NFTNL_SET_FLAGS),
                                 nftnl_set_get_u32(set.get(), NFTNL_SET_KEY_LEN),
                                 nftnl_set_get_u32(set.get(), NFTNL_SET_DATA_TYPE)});
        return absl::OkStatus();
      }));
  ChainPtr chain_request(nftnl_chain_alloc());
  nftnl_chain_set_str(chain_request.get(), NFTNL_CHAIN_TABLE, table.name);
  RETURN_IF_ERROR(socket_->Request(
      NFT_MSG_GETCHAIN, table.family, /*dump=*/true,
      [&](nlmsghdr* h) { nftnl_chain_nlmsg_build_payload(h, chain_request.get()); },
      [&](const nlmsghdr* h) {
        ChainPtr chain(nftnl_chain_alloc());
        if (nftnl_chain_nlmsg_parse(h, chain.get()) < 0) return ParseError("chain");
        if (std::strcmp(nftnl_chain_get_str(chain.get(), NFTNL_CHAIN_TABLE), table.name) != 0 ||
            !nftnl_chain_is_set(chain.get(), NFTNL_CHAIN_HOOKNUM)) {
          return absl::OkStatus();
        }
        nft::BaseChainSnapshot base;
        base.name = nftnl_chain_get_str(chain.get(), NFTNL_CHAIN_NAME);
        const char* type = nftnl_chain_get_str(chain.get(), NFTNL_CHAIN_TYPE);
        base.type = type == nullptr ? "" : type;
        base.hooknum = nftnl_chain_get_u32(chain.get(), NFTNL_CHAIN_HOOKNUM);
        snapshot.base_chains.push_back(std::move(base));
        return absl::OkStatus();
      }));
  for (nft::BaseChainSnapshot& base : snapshot.base_chains) {
    RulePtr rule_request(nftnl_rule_alloc());
    nftnl_rule_set_str(rule_request.get(), NFTNL_RULE_TABLE, table.name);
    nftnl_rule_set_str(rule_request.get(), NFTNL_RULE_CHAIN, base.name.c_str());
    RETURN_IF_ERROR(socket_->Request(
        NFT_MSG_GETRULE, table.family, /*dump=*/true,
        [&](nlmsghdr* h) { nftnl_rule_nlmsg_build_payload(h, rule_request.get()); },
        [&](const nlmsghdr* h) {
          RulePtr rule(nftnl_rule_alloc());
          if (nftnl_rule_nlmsg_parse(h, rule.get()) < 0) return ParseError("rule");
          if (std::strcmp(nftnl_rule_get_str(rule.get(), NFTNL_RULE_TABLE), table.name) != 0 ||
              base.name != nftnl_rule_get_str(rule.get(), NFTNL_RULE_CHAIN)) {
            return absl::OkStatus();
          }
          std::vector<nft::ExprSnapshot> exprs;
          nftnl_expr_iter* it = nftnl_expr_iter_create(rule.get());
          for (nftnl_expr* e = nftnl_expr_iter_next(it); e != nullptr;
               e = nftnl_expr_iter_next(it)) {
            nft::ExprSnapshot x;
            x.name = nftnl_expr_get_str(e, NFTNL_EXPR_NAME);
            if (x.name == "meta") {
              x.meta_key = nftnl_expr_get_u32(e, NFTNL_EXPR_META_KEY);
              x.dreg = nftnl_expr_get_u32(e, NFTNL_EXPR_META_DREG);
            } else if (x.name == "byteorder") {
              x.sreg = nftnl_expr_get_u32(e, NFTNL_EXPR_BYTEORDER_SREG);
              x.dreg = nftnl_expr_get_u32(e, NFTNL_EXPR_BYTEORDER_DREG);
              x.byteorder_op = nftnl_expr_get_u32(e, NFTNL_EXPR_BYTEORDER_OP);
            } else if (x.name == "lookup") {
              x.sreg = nftnl_expr_get_u32(e, NFTNL_EXPR_LOOKUP_SREG);
              x.dreg = nftnl_expr_get_u32(e, NFTNL_EXPR_LOOKUP_DREG);
              const char* set = nftnl_expr_get_str(e, NFTNL_EXPR_LOOKUP_SET);
              x.set = set == nullptr ? "" : set;
            }
            exprs.push_back(std::move(x));
          }
          nftnl_expr_iter_destroy(it);
          base.rules.push_back(std::move(exprs));
          return absl::OkStatus();
        }));
  }
  return snapshot;
}

absl::StatusOr<std::set<uint32_t>> NftNetfilter::AgentChains(const LeashTable& table) {
  std::set<uint32_t> uids;
  ChainPtr request(nftnl_chain_alloc());
  nftnl_chain_set_str(request.get(), NFTNL_CHAIN_TABLE, table.name);
  absl::Status s = socket_->Request(
      NFT_MSG_GETCHAIN, table.family, /*dump=*/true,
      [&](nlmsghdr* h) { nftnl_chain_nlmsg_build_payload(h, request.get()); },
      [&](const nlmsghdr* h) {
        ChainPtr chain(nftnl_chain_alloc());
        if (nftnl_chain_nlmsg_parse(h, chain.get()) < 0) return ParseError("chain");
        if (std::strcmp(nftnl_chain_get_str(chain.get(), NFTNL_CHAIN_TABLE), table.name) != 0) {
          return absl::OkStatus();
        }
        if (std::optional<uint32_t> uid =
                nft::ParseAgentChainName(nftnl_chain_get_str(chain.get(), NFTNL_CHAIN_NAME))) {
          uids.insert(*uid);
        }
        return absl::OkStatus();
      });
  if (absl::IsNotFound(s)) return uids;
  if (!s.ok()) return s;
  return uids;
}

absl::StatusOr<nft::PresentIntervals> NftNetfilter::MapElements(const LeashTable& table) {
  std::vector<nft::DumpedElement> elements;
  SetPtr request = MapNamed(table);
  absl::Status s = socket_->Request(
      NFT_MSG_GETSETELEM, table.family, /*dump=*/true,
      [&](nlmsghdr* h) { nftnl_set_elems_nlmsg_build_payload(h, request.get()); },
      [&](const nlmsghdr* h) { return CollectElements(h, elements); });
  if (absl::IsNotFound(s)) return nft::PresentIntervals();
  if (!s.ok()) return s;
  return nft::PairDumpedElements(std::move(elements));
}

absl::StatusOr<bool> NftNetfilter::ChainExists(const LeashTable& table, uint32_t uid) {
  ChainPtr request(nftnl_chain_alloc());
  nftnl_chain_set_str(request.get(), NFTNL_CHAIN_TABLE, table.name);
  nftnl_chain_set_str(request.get(), NFTNL_CHAIN_NAME, nft::AgentChainName(uid).c_str());
  absl::Status s = socket_->Request(
      NFT_MSG_GETCHAIN, table.family, /*dump=*/false,
      [&](nlmsghdr* h) { nftnl_chain_nlmsg_build_payload(h, request.get()); },
      [](const nlmsghdr*) { return absl::OkStatus(); });
  if (absl::IsNotFound(s)) return false;
  if (!s.ok()) return s;
  return true;
}

absl::StatusOr<NftNetfilter::Presence> NftNetfilter::PresenceOf(uint32_t uid) {
  Presence presence;
  for (size_t i = 0; i < Tables().size(); ++i) {
    ASSIGN_OR_RETURN(const bool chain, ChainExists(Tables()[i], uid));
    ASSIGN_OR_RETURN(presence.elements[i], MapElements(Tables()[i]));
    if (chain) presence.chains[i].insert(uid);
  }
  return presence;
}

absl::StatusOr<NftNetfilter::Presence> NftNetfilter::PresenceOfAll() {
  Presence presence;
  for (size_t i = 0; i < Tables().size(); ++i) {
    ASSIGN_OR_RETURN(presence.chains[i], AgentChains(Tables()[i]));
    ASSIGN_OR_RETURN(presence.elements[i], MapElements(Tables()[i]));
  }
  return presence;
}

absl::StatusOr<std::vector<std::string>> NftNetfilter::Prepare() {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> lines;
  NftBatch batch(socket_->next_seq());
  uint32_t set_id = 1;
  for (const LeashTable& table : Tables()) {
    ASSIGN_OR_RETURN(const bool exists, TableExists(table));
    if (exists) {
      ASSIGN_OR_RETURN(const nft::TableSnapshot snapshot, ReadTable(table));
      const std::optional<std::string> reason = nft::OldShapeReason(table, snapshot);
      if (!reason.has_value()) continue;  // current shape: left exactly as it is
      // A table in an older shape is dropped at start, before the first subject is applied, and
      // said on stderr: its stale redirect would win over the dispatch (docs/ARCHITECTURE.md,
      // rule N12).
      batch.DeleteTable(table.family, table.name, absl::StrCat("delete table ", table.Label()));
      lines.push_back(absl::StrCat(
          "leash: dropped table ", table.Label(), " left in the old shape (", *reason,
          "); a per-subject release could not have removed its rules. Every subject is "
          "re-applied in the per-UID shape now."));
    }
    nft::AddSkeleton(batch, table, set_id++);
  }
  // The guard holds no subject's state: one in another shape is replaced whole, in the same
  // transaction, so there is no moment without it; one in the current shape is left as it is.
  ASSIGN_OR_RETURN(const bool guarded, TableExists(nft::GuardTable()));
  std::optional<std::string> guard_reason = std::string("it does not exist");
  if (guarded) {
    ASSIGN_OR_RETURN(const nft::TableSnapshot snapshot, ReadTable(nft::GuardTable()));
    guard_reason = nft::GuardShapeReason(snapshot);
    if (guard_reason.has_value()) {
      batch.DeleteTable(nft::GuardTable().family, nft::GuardTable().name,
                        absl::StrCat("delete table ", nft::GuardTable().Label()));
    }
  }
  if (guard_reason.has_value()) nft::AddGuard(batch);
  absl::Status sent = socket_->Send(batch);
  if (!sent.ok()) {
    return absl::Status(sent.code(),
                        absl::StrCat("preparing the leash nftables tables: ", sent.message()));
  }
  return lines;
}

absl::Status NftNetfilter::ApplyWith(const std::vector<NetfilterSubject>& subjects,
                                     const Presence& presence) {
  NftBatch batch(socket_->next_seq());
  for (size_t i = 0; i < Tables().size(); ++i) {
    nft::ApplySubjects(batch, Tables()[i], subjects, presence.elements[i], presence.chains[i]);
  }
  return socket_->Send(batch);
}

absl::Status NftNetfilter::ExplainApplyFailure(absl::Status status) {
  if (!absl::IsNotFound(status)) return status;
  for (const LeashTable& table : Tables()) {
    absl::StatusOr<bool> exists = TableExists(table);
    if (exists.ok() && !*exists) {
      return absl::FailedPreconditionError(absl::StrCat(
          "table ", table.Label(), " does not exist; Prepare() creates the leash tables and "
          "must run before the first subject is applied (", status.message(), ")"));
    }
  }
  return status;
}

absl::Status NftNetfilter::Apply(const NetfilterSubject& subject) {
  RETURN_IF_ERROR(ValidateNetfilterSubject(subject));
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(const Presence presence, PresenceOf(subject.uid));
  return ExplainApplyFailure(ApplyWith({subject}, presence));
}

absl::Status NftNetfilter::ApplyAll(const std::vector<NetfilterSubject>& subjects) {
  std::set<uint32_t> seen;
  for (const NetfilterSubject& subject : subjects) {
    RETURN_IF_ERROR(ValidateNetfilterSubject(subject));
    if (!seen.insert(subject.uid).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("UID ", subject.uid, " appears twice in one ApplyAll"));
    }
  }
  if (subjects.empty()) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(const Presence presence, PresenceOfAll());
  return ExplainApplyFailure(ApplyWith(subjects, presence));
}

absl::Status NftNetfilter::Release(uint32_t uid) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(const Presence presence, PresenceOf(uid));
  NftBatch batch(socket_->next_seq());
  for (size_t i = 0; i < Tables().size(); ++i) {
    nft::PresentIntervals own;
    if (auto it = presence.elements[i].find(uid); it != presence.elements[i].end()) {
      own[uid] = it->second;
    }
    nft::ReleaseSubjects(
        batch, Tables()[i], own,
        std::vector<uint32_t>(presence.chains[i].begin(), presence.chains[i].end()));
  }
  return socket_->Send(batch);  // nothing present: an empty batch, nothing sent
}

absl::StatusOr<NetfilterCounters> NftNetfilter::ReadCounters(uint32_t uid) {
  absl::MutexLock lock(&mu_);
  const LeashTable& filter = Tables()[2];
  const std::string chain = nft::AgentChainName(uid);
  RulePtr request(nftnl_rule_alloc());
  nftnl_rule_set_str(request.get(), NFTNL_RULE_TABLE, filter.name);
  nftnl_rule_set_str(request.get(), NFTNL_RULE_CHAIN, chain.c_str());
  NetfilterCounters counters;
  size_t rules = 0;
  absl::Status s = socket_->Request(
      NFT_MSG_GETRULE, filter.family, /*dump=*/true,
      [&](nlmsghdr* h) { nftnl_rule_nlmsg_build_payload(h, request.get()); },
      [&](const nlmsghdr* h) {
        RulePtr rule(nftnl_rule_alloc());
        if (nftnl_rule_nlmsg_parse(h, rule.get()) < 0) return ParseError("rule");
        if (std::strcmp(nftnl_rule_get_str(rule.get(), NFTNL_RULE_TABLE), filter.name) != 0 ||
            chain != nftnl_rule_get_str(rule.get(), NFTNL_RULE_CHAIN)) {
          return absl::OkStatus();
        }
        ++rules;
        nft::TallyCounters(rule.get(), counters);
        return absl::OkStatus();
      });
  if (absl::IsNotFound(s)) rules = 0;
  else if (!s.ok()) return s;
  // A dump naming a chain that does not exist is simply empty, and every agent chain holds
  // rules: only then is the chain looked up by name.
  if (rules == 0) {
    ASSIGN_OR_RETURN(const bool exists, ChainExists(filter, uid));
    if (!exists) {
      return absl::NotFoundError(
          absl::StrCat("UID ", uid, " has no chain ", chain, " in ", filter.Label()));
    }
  }
  return counters;
}

absl::StatusOr<std::vector<uint32_t>> NftNetfilter::ListSubjects() {
  absl::MutexLock lock(&mu_);
  std::set<uint32_t> uids;
  for (const LeashTable& table : Tables()) {
    ASSIGN_OR_RETURN(const std::set<uint32_t> found, AgentChains(table));
    uids.insert(found.begin(), found.end());
  }
  return std::vector<uint32_t>(uids.begin(), uids.end());
}

}  // namespace leash::controlplane
