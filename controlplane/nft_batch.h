// One nf_tables transaction as netlink bytes: NFNL_MSG_BATCH_BEGIN, the commands, and
// NFNL_MSG_BATCH_END in one buffer that is sent with a single sendmsg, so the kernel applies
// all of it or none of it. Pure byte building over libnftnl; nothing here opens a socket, so
// the exact messages Leash sends are unit-tested without root (nft_ruleset_test.cc).
#pragma once

#include <linux/netlink.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

struct nftnl_chain;
struct nftnl_rule;
struct nftnl_set;

namespace leash::controlplane {

class NftBatch {
 public:
  // The largest single message a caller may append.
  static constexpr size_t kMaxMessageBytes = 64 * 1024;

  // Messages are numbered from `first_seq` (the BATCH_BEGIN) upward; the socket maps an error
  // reply back to the command that caused it through these numbers.
  explicit NftBatch(uint32_t first_seq);
  ~NftBatch();

  NftBatch(const NftBatch&) = delete;
  NftBatch& operator=(const NftBatch&) = delete;

  // Each command is described in words ("add chain agent_1001 to table ip leash") so an
  // error names what the kernel refused.
  void AddTable(uint16_t family, absl::string_view name, std::string description);
  void DeleteTable(uint16_t family, absl::string_view name, std::string description);
  // `exclusive`: fail if the chain exists (a per-UID chain is always created fresh).
  void AddChain(const nftnl_chain* chain, bool exclusive, std::string description);
  void DeleteChain(uint16_t family, absl::string_view table, absl::string_view name,
                   std::string description);
  void AddSet(nftnl_set* set, std::string description);
  void AddRule(nftnl_rule* rule, std::string description);
  // The elements attached to `set` (which names table, set, family and, for a set made in
  // this batch, its id). Keep a message under kMaxMessageBytes (a few hundred elements).
  void AddElements(nftnl_set* set, std::string description);
  void DeleteElements(nftnl_set* set, std::string description);

  // Number of commands (BEGIN/END not counted).
  int command_count() const { return static_cast<int>(description_ends_.size()); }
  bool empty() const { return description_ends_.empty(); }

  // Closes the batch (BATCH_END) and returns the bytes to send. Only the last command asks
  // for an acknowledgement: errors are reported for any message regardless, and one ack
  // (instead of thousands) keeps the reply small for a 1,000-subject batch.
  // Call once; the batch cannot be extended afterwards.
  absl::string_view Finish();

  uint32_t first_seq() const { return first_seq_; }
  // The seq the last command carries (the one that is acknowledged).
  uint32_t last_command_seq() const { return first_seq_ + command_count(); }
  // The description of the message numbered `seq`, or "" when it is not a command.
  std::string Describe(uint32_t seq) const;

 private:
  // Appends one message: a header of `type` and `flags`, then `payload` fills the body.
  void Append(uint16_t type, uint16_t family, uint16_t flags, std::string description,
              const std::function<void(nlmsghdr*)>& payload);
  nlmsghdr* Reserve();
  void Commit(const nlmsghdr* message);

  uint32_t first_seq_;
  // malloc/realloc rather than std::vector: growth need not zero-fill (libmnl writes every
  // byte it sends), and a large block can grow by mremap instead of a copy. A 1,000-subject
  // startup batch runs to megabytes (//controlplane:nft_ruleset_benchmark prints its size).
  char* buffer_ = nullptr;
  size_t capacity_ = 0;
  size_t used_ = 0;
  size_t last_command_offset_ = 0;
  // All descriptions back to back (one allocation, not one per command), and where each ends.
  std::string descriptions_;
  std::vector<uint32_t> description_ends_;
  bool finished_ = false;
};

}  // namespace leash::controlplane
