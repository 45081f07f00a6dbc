#include "controlplane/nft_batch.h"

#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <linux/netfilter/nf_tables.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <utility>

namespace leash::controlplane {
namespace {

struct TableDeleter {
  void operator()(nftnl_table* table) const { nftnl_table_free(table); }
};
struct ChainDeleter {
  void operator()(nftnl_chain* chain) const { nftnl_chain_free(chain); }
};

}  // namespace

NftBatch::NftBatch(uint32_t first_seq) : first_seq_(first_seq) {
  nlmsghdr* begin = nftnl_batch_begin(reinterpret_cast<char*>(Reserve()), first_seq_);
  Commit(begin);
}

NftBatch::~NftBatch() { std::free(buffer_); }

nlmsghdr* NftBatch::Reserve() {
  if (capacity_ < used_ + kMaxMessageBytes) {
    const size_t capacity = std::max(capacity_ * 2, used_ + kMaxMessageBytes);
    char* grown = static_cast<char*>(std::realloc(buffer_, capacity));
    // Out of memory building a netlink batch: nothing sensible to return to.
    if (grown == nullptr) std::abort();
    buffer_ = grown;
    capacity_ = capacity;
  }
  // libmnl zeroes every header and padding it writes; the rest is written in full.
  return reinterpret_cast<nlmsghdr*>(buffer_ + used_);
}

void NftBatch::Commit(const nlmsghdr* message) { used_ += NLMSG_ALIGN(message->nlmsg_len); }

void NftBatch::Append(uint16_t type, uint16_t family, uint16_t flags, std::string description,
                      const std::function<void(nlmsghdr*)>& payload) {
  const uint32_t seq = first_seq_ + 1 + static_cast<uint32_t>(description_ends_.size());
  const size_t offset = used_;
  nlmsghdr* header =
      nftnl_nlmsg_build_hdr(reinterpret_cast<char*>(Reserve()), type, family, flags, seq);
  payload(header);
  Commit(header);
  last_command_offset_ = offset;
  descriptions_ += description;
  description_ends_.push_back(static_cast<uint32_t>(descriptions_.size()));
}

void NftBatch::AddTable(uint16_t family, absl::string_view name, std::string description) {
  std::unique_ptr<nftnl_table, TableDeleter> table(nftnl_table_alloc());
  nftnl_table_set_u32(table.get(), NFTNL_TABLE_FAMILY, family);
  nftnl_table_set_str(table.get(), NFTNL_TABLE_NAME, std::string(name).c_str());
  // NLM_F_CREATE without NLM_F_EXCL: an existing table is left as it is, never emptied.
  Append(NFT_MSG_NEWTABLE, family, NLM_F_CREATE, std::move(description),
         [&](nlmsghdr* h) { nftnl_table_nlmsg_build_payload(h, table.get()); });
}

void NftBatch::DeleteTable(uint16_t family, absl::string_view name, std::string description) {
  std::unique_ptr<nftnl_table, TableDeleter> table(nftnl_table_alloc());
  nftnl_table_set_u32(table.get(), NFTNL_TABLE_FAMILY, family);
  nftnl_table_set_str(table.get(), NFTNL_TABLE_NAME, std::string(name).c_str());
  Append(NFT_MSG_DELTABLE, family, 0, std::move(description),
         [&](nlmsghdr* h) { nftnl_table_nlmsg_build_payload(h, table.get()); });
}

void NftBatch::AddChain(const nftnl_chain* chain, bool exclusive, std::string description) {
  const uint16_t family = static_cast<uint16_t>(nftnl_chain_get_u32(chain, NFTNL_CHAIN_FAMILY));
  Append(NFT_MSG_NEWCHAIN, family, NLM_F_CREATE | (exclusive ? NLM_F_EXCL : 0),
         std::move(description), [&](nlmsghdr* h) { nftnl_chain_nlmsg_build_payload(h, chain); });
}

void NftBatch::DeleteChain(uint16_t family, absl::string_view table, absl::string_view name,
                           std::string description) {
  std::unique_ptr<nftnl_chain, ChainDeleter> chain(nftnl_chain_alloc());
  nftnl_chain_set_u32(chain.get(), NFTNL_CHAIN_FAMILY, family);
  nftnl_chain_set_str(chain.get(), NFTNL_CHAIN_TABLE, std::string(table).c_str());
  nftnl_chain_set_str(chain.get(), NFTNL_CHAIN_NAME, std::string(name).c_str());
  // Deleting a chain deletes its rules with it; the kernel refuses (EBUSY) while anything
  // still jumps to it, which is why a UID's map element is deleted first in the same batch.
  Append(NFT_MSG_DELCHAIN, family, 0, std::move(description),
         [&](nlmsghdr* h) { nftnl_chain_nlmsg_build_payload(h, chain.get()); });
}

void NftBatch::AddSet(nftnl_set* set, std::string description) {
  const uint16_t family = static_cast<uint16_t>(nftnl_set_get_u32(set, NFTNL_SET_FAMILY));
  Append(NFT_MSG_NEWSET, family, NLM_F_CREATE, std::move(description),
         [&](nlmsghdr* h) { nftnl_set_nlmsg_build_payload(h, set); });
}

void NftBatch::AddRule(nftnl_rule* rule, std::string description) {
  const uint16_t family = static_cast<uint16_t>(nftnl_rule_get_u32(rule, NFTNL_RULE_FAMILY));
  Append(NFT_MSG_NEWRULE, family, NLM_F_CREATE | NLM_F_APPEND, std::move(description),
         [&](nlmsghdr* h) { nftnl_rule_nlmsg_build_payload(h, rule); });
}

void NftBatch::AddElements(nftnl_set* set, std::string description) {
  const uint16_t family = static_cast<uint16_t>(nftnl_set_get_u32(set, NFTNL_SET_FAMILY));
  // NLM_F_EXCL: an element for this UID must not already exist (it was deleted earlier in the
  // batch if it did), so a stale jump can never silently survive.
  Append(NFT_MSG_NEWSETELEM, family, NLM_F_CREATE | NLM_F_EXCL, std::move(description),
         [&](nlmsghdr* h) { nftnl_set_elems_nlmsg_build_payload(h, set); });
}

void NftBatch::DeleteElements(nftnl_set* set, std::string description) {
  const uint16_t family = static_cast<uint16_t>(nftnl_set_get_u32(set, NFTNL_SET_FAMILY));
  Append(NFT_MSG_DELSETELEM, family, 0, std::move(description),
         [&](nlmsghdr* h) { nftnl_set_elems_nlmsg_build_payload(h, set); });
}

absl::string_view NftBatch::Finish() {
  if (!finished_) {
    finished_ = true;
    if (!description_ends_.empty()) {
      reinterpret_cast<nlmsghdr*>(buffer_ + last_command_offset_)->nlmsg_flags |=
          NLM_F_ACK;
    }
    const uint32_t end_seq = first_seq_ + 1 + static_cast<uint32_t>(description_ends_.size());
    Commit(nftnl_batch_end(reinterpret_cast<char*>(Reserve()), end_seq));
  }
  return absl::string_view(buffer_, used_);
}

std::string NftBatch::Describe(uint32_t seq) const {
  if (seq <= first_seq_ || seq > first_seq_ + description_ends_.size()) return "";
  const size_t index = seq - first_seq_ - 1;
  const size_t begin = index == 0 ? 0 : description_ends_[index - 1];
  return descriptions_.substr(begin, description_ends_[index] - begin);
}

}  // namespace leash::controlplane
