#include "controlplane/nft_socket.h"

#include <libmnl/libmnl.h>
#include <libnftnl/common.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <ctime>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace leash::controlplane {
namespace {

// Enough for any single reply burst; a dump continues over several reads.
constexpr size_t kReceiveBufferSize = 256 * 1024;
// How long to wait for the kernel's acknowledgement of a batch. The kernel processes a batch
// synchronously inside sendmsg, so the replies are normally queued before it returns; the
// wait only bounds a kernel that never answers.
constexpr int kAckTimeoutMs = 10000;
constexpr int kDumpRetries = 5;

absl::Status NetlinkError(int error, const std::string& what) {
  if (error == EPERM) {
    return absl::PermissionDeniedError(absl::StrCat(
        what, ": operation not permitted (nf_tables needs CAP_NET_ADMIN: run leashd as root)"));
  }
  return absl::ErrnoToStatus(error, what);
}

}  // namespace

absl::StatusOr<std::unique_ptr<NftSocket>> NftSocket::Open() {
  mnl_socket* socket = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
  if (socket == nullptr) {
    return NetlinkError(errno, "open netlink socket (NETLINK_NETFILTER)");
  }
  if (mnl_socket_bind(socket, 0, MNL_SOCKET_AUTOPID) < 0) {
    const int error = errno;
    mnl_socket_close(socket);
    return NetlinkError(error, "bind netlink socket (NETLINK_NETFILTER)");
  }
  // Error replies carry only the header of the refused message, not all of it.
  int on = 1;
  mnl_socket_setsockopt(socket, NETLINK_CAP_ACK, &on, sizeof(on));
  return std::unique_ptr<NftSocket>(new NftSocket(socket));
}

NftSocket::NftSocket(mnl_socket* socket)
    : socket_(socket),
      portid_(mnl_socket_get_portid(socket)),
      next_seq_(static_cast<uint32_t>(time(nullptr))),
      receive_buffer_(kReceiveBufferSize) {}

NftSocket::~NftSocket() { mnl_socket_close(socket_); }

uint32_t NftSocket::ReserveSeq(uint32_t count) {
  const uint32_t first = next_seq_;
  next_seq_ += count;
  return first;
}

absl::Status NftSocket::EnsureSendBuffer(size_t bytes) {
  // The whole batch is one datagram, and netlink refuses a datagram larger than the socket's
  // send buffer (EMSGSIZE): a 1,000-subject startup batch is a few MiB.
  const size_t wanted = bytes + 64 * 1024;
  if (wanted <= send_buffer_) return absl::OkStatus();
  int size = static_cast<int>(wanted);
  const int fd = mnl_socket_get_fd(socket_);
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)) != 0 &&
      setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size)) != 0) {
    return NetlinkError(errno, absl::StrCat("set netlink send buffer to ", wanted, " bytes"));
  }
  send_buffer_ = wanted;
  return absl::OkStatus();
}

absl::Status NftSocket::Send(NftBatch& batch) {
  if (batch.empty()) return absl::OkStatus();
  const absl::string_view bytes = batch.Finish();
  // BEGIN, the commands, END.
  const uint32_t after = batch.first_seq() + static_cast<uint32_t>(batch.command_count()) + 2;
  if (static_cast<int32_t>(after - next_seq_) > 0) next_seq_ = after;
  if (absl::Status s = EnsureSendBuffer(bytes.size()); !s.ok()) return s;
  const std::string what = absl::StrCat("nftables batch of ", batch.command_count(), " command",
                                        batch.command_count() == 1 ? "" : "s");
  if (mnl_socket_sendto(socket_, bytes.data(), bytes.size()) < 0) {
    return NetlinkError(errno, absl::StrCat("send ", what));
  }
  const int fd = mnl_socket_get_fd(socket_);
  bool acked = false;
  int first_error = 0;
  uint32_t first_error_seq = 0;
  int errors = 0;
  while (true) {
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, (acked || errors > 0) ? 0 : kAckTimeoutMs);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    const ssize_t n = recv(fd, receive_buffer_.data(), receive_buffer_.size(), MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return NetlinkError(errno, absl::StrCat("read the replies to ", what));
    }
    int left = static_cast<int>(n);
    for (const nlmsghdr* h = reinterpret_cast<const nlmsghdr*>(receive_buffer_.data());
         mnl_nlmsg_ok(h, left); h = mnl_nlmsg_next(h, &left)) {
      if (h->nlmsg_type != NLMSG_ERROR) continue;
      const auto* err = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(h));
      if (err->error == 0) {
        if (h->nlmsg_seq == batch.last_command_seq()) acked = true;
        continue;
      }
      if (errors++ == 0) {
        first_error = -err->error;
        first_error_seq = h->nlmsg_seq;
      }
    }
  }
  if (errors > 0) {
    std::string command = batch.Describe(first_error_seq);
    if (command.empty()) command = absl::StrCat("message ", first_error_seq - batch.first_seq());
    return NetlinkError(first_error,
                        absl::StrCat(what, " refused at `", command, "`",
                                     errors > 1 ? absl::StrCat(" (and ", errors - 1, " more)") : "",
                                     "; nothing was applied (the batch is one transaction)"));
  }
  if (!acked) {
    return absl::DeadlineExceededError(absl::StrCat(
        "the kernel did not acknowledge the ", what, " within ", kAckTimeoutMs, " ms"));
  }
  return absl::OkStatus();
}

absl::Status NftSocket::Request(uint16_t type, uint16_t family, bool dump,
                                const std::function<void(nlmsghdr*)>& payload,
                                const std::function<absl::Status(const nlmsghdr*)>& on_reply) {
  for (int attempt = 0;; ++attempt) {
    const uint32_t seq = ReserveSeq(1);
    char request[MNL_SOCKET_BUFFER_SIZE];
    nlmsghdr* header = nftnl_nlmsg_build_hdr(request, type, family,
                                             dump ? NLM_F_DUMP : NLM_F_ACK, seq);
    payload(header);
    if (mnl_socket_sendto(socket_, header, header->nlmsg_len) < 0) {
      return NetlinkError(errno, "send nf_tables request");
    }
    // Read to the end of this request's replies (NLMSG_DONE, or the ack/error of a get) even
    // after a failure, so nothing of it is left queued for the next request.
    absl::Status callback_status;
    int error = 0;
    bool interrupted = false;
    bool done = false;
    while (!done) {
      const ssize_t n = recv(mnl_socket_get_fd(socket_), receive_buffer_.data(),
                             receive_buffer_.size(), 0);
      if (n < 0) {
        if (errno == EINTR) continue;
        return NetlinkError(errno, "read nf_tables reply");
      }
      int left = static_cast<int>(n);
      for (const nlmsghdr* h = reinterpret_cast<const nlmsghdr*>(receive_buffer_.data());
           mnl_nlmsg_ok(h, left); h = mnl_nlmsg_next(h, &left)) {
        if (h->nlmsg_seq != seq || h->nlmsg_pid != portid_) continue;  // a stale reply
        if (h->nlmsg_flags & NLM_F_DUMP_INTR) interrupted = true;
        if (h->nlmsg_type == NLMSG_DONE) {
          done = true;
        } else if (h->nlmsg_type == NLMSG_ERROR) {
          error = -static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(h))->error;
          done = true;
        } else if (h->nlmsg_type >= NLMSG_MIN_TYPE && callback_status.ok()) {
          callback_status = on_reply(h);
        }
      }
    }
    if (error == ENOENT) return absl::NotFoundError("no such nf_tables object");
    if (error != 0) return NetlinkError(error, "nf_tables request");
    // A dump that raced a change may be inconsistent: read it again.
    if (interrupted && dump && attempt < kDumpRetries) continue;
    return callback_status;
  }
}

}  // namespace leash::controlplane
