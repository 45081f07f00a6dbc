// The one kernel-facing piece of the nft applier: a NETLINK_NETFILTER socket (libmnl) that
// sends an NftBatch as a single datagram and reads nf_tables objects back. Everything that
// decides *what* to send is in nft_ruleset (pure, unit-tested); this file only moves bytes.
// Tested for real by the root tests in test/network/.
#pragma once

#include <linux/netlink.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controlplane/nft_batch.h"

struct mnl_socket;

namespace leash::controlplane {

class NftSocket {
 public:
  // Opens and binds the socket. It belongs to the network namespace of the calling thread for
  // its whole life. PermissionDenied without CAP_NET_ADMIN is reported on first use, not here.
  static absl::StatusOr<std::unique_ptr<NftSocket>> Open();
  ~NftSocket();
  NftSocket(const NftSocket&) = delete;
  NftSocket& operator=(const NftSocket&) = delete;

  // The sequence number a new NftBatch starts from; Send() moves past the batch's numbers.
  uint32_t next_seq() const { return next_seq_; }

  // Sends the batch (finishing it) in one sendmsg and reads every reply. OK only when the
  // kernel acknowledged the last command and reported no error. On error nothing was applied
  // (the batch is one transaction); the status carries the errno's code (NotFound for ENOENT,
  // AlreadyExists for EEXIST, ...) and names the refused command. An empty batch is OK and
  // sends nothing.
  absl::Status Send(NftBatch& batch);

  // One request: `type` (NFT_MSG_GET*) for `family`, as a dump when `dump`; `payload` fills the
  // message body; `on_reply` sees each object message. NotFound when the kernel answers ENOENT
  // (no such table, chain or element). A dump interrupted by a concurrent change is retried.
  absl::Status Request(uint16_t type, uint16_t family, bool dump,
                       const std::function<void(nlmsghdr*)>& payload,
                       const std::function<absl::Status(const nlmsghdr*)>& on_reply);

 private:
  explicit NftSocket(mnl_socket* socket);
  uint32_t ReserveSeq(uint32_t count);
  absl::Status EnsureSendBuffer(size_t bytes);

  mnl_socket* socket_;
  uint32_t portid_;
  uint32_t next_seq_;
  size_t send_buffer_ = 0;
  std::vector<char> receive_buffer_;
};

}  // namespace leash::controlplane
