#include "controlplane/h2_settings_gate.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace leash::controlplane {
namespace {

constexpr absl::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr uint8_t kHeaders = 0x1;
constexpr uint8_t kSettings = 0x4;
constexpr uint8_t kAckFlag = 0x1;

}  // namespace

void H2SettingsGate::Refuse(std::string why) {
  state_ = State::kRefused;
  why_ = std::move(why);
}

void H2SettingsGate::OnFrameHeader(uint64_t header_start) {
  const uint32_t length = (uint32_t{header_[0]} << 16) | (uint32_t{header_[1]} << 8) | header_[2];
  const uint8_t type = header_[3];
  const uint8_t flags = header_[4];
  const uint32_t stream = ((uint32_t{header_[5]} & 0x7f) << 24) | (uint32_t{header_[6]} << 16) |
                          (uint32_t{header_[7]} << 8) | header_[8];
  payload_left_ = length;
  if (type == kSettings && (flags & kAckFlag) != 0 && server_settings_sent_) {
    // Everything held passes with the ACK: gRPC now counts the streams itself.
    state_ = State::kOpen;
    return;
  }
  // A HEADERS frame on a stream above every one seen opens a new stream (gRPC refuses one at or
  // below, so it allocates nothing for it); CONTINUATION and trailers add to an open one.
  if (type != kHeaders || stream <= highest_stream_) return;
  highest_stream_ = stream;
  ++new_streams_;
  if (state_ == State::kScanning && new_streams_ > max_streams_before_ack_) {
    state_ = State::kHolding;
    hold_at_ = header_start;
  }
}

H2SettingsGate::State H2SettingsGate::Scan(absl::string_view bytes) {
  while (!bytes.empty() && (state_ == State::kScanning || state_ == State::kHolding)) {
    if (preface_seen_ < kPreface.size()) {
      const size_t n = std::min(bytes.size(), kPreface.size() - preface_seen_);
      if (bytes.substr(0, n) != kPreface.substr(preface_seen_, n)) {
        Refuse(absl::StrCat("sent no HTTP/2 client preface (byte ", scanned_ + 1,
                            " differs), so it is not a gRPC client"));
        break;
      }
      preface_seen_ += n;
      scanned_ += n;
      bytes.remove_prefix(n);
      continue;
    }
    if (payload_left_ > 0) {
      const size_t n = std::min<size_t>(bytes.size(), payload_left_);
      payload_left_ -= static_cast<uint32_t>(n);
      scanned_ += n;
      bytes.remove_prefix(n);
      continue;
    }
    const size_t n = std::min(bytes.size(), sizeof(header_) - header_seen_);
    std::copy_n(bytes.data(), n, header_ + header_seen_);
    header_seen_ += n;
    scanned_ += n;
    bytes.remove_prefix(n);
    if (header_seen_ == sizeof(header_)) {
      header_seen_ = 0;
      OnFrameHeader(scanned_ - sizeof(header_));
    }
  }
  // Bytes after the ACK are not parsed; they pass as they are.
  if (state_ == State::kOpen) scanned_ += bytes.size();
  return state_;
}

}  // namespace leash::controlplane
