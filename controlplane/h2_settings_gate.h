// The bound on the HTTP/2 streams a tools-socket client may open before it acknowledges the
// server's SETTINGS. gRPC's server enforces SETTINGS_MAX_CONCURRENT_STREAMS only once the
// client has acknowledged the frame that set it, and reads (and allocates) every stream opened
// before that far ahead of the handlers where leashd admits calls; a client that never sends
// the acknowledgement could make leashd hold as many streams as it can write before a cut,
// a number set by a race. This scanner reads the client's side of a connection as it arrives
// (no syscalls; UnixGrpcServer's relay feeds it) and says how much of it may reach gRPC:
//   - the 24-byte client preface must be exactly HTTP/2's, or the connection is refused;
//   - then 9-byte frame headers (24-bit length, type, flags, 31-bit stream id) are read across
//     partial reads and the payloads skipped, counting new client streams (a HEADERS frame on a
//     stream id above every one seen) and watching for the client's SETTINGS ACK;
//   - before that ACK at most `max_streams_before_ack` new streams pass. The frame that would
//     open one more is held, with everything after it, while the scan goes on through the held
//     bytes: an ACK found there releases them (a well-behaved client that opened its calls
//     before reading the server's SETTINGS is not hurt); a holder whose buffer fills first
//     has the connection cut (the relay's buffer is fixed, so what is held is bounded).
// An ACK counts only once the server's SETTINGS have reached the client side (the relay says
// so with ServerSettingsSent): gRPC takes an ACK as acknowledging what it has sent, so an ACK
// written before that would acknowledge nothing.
// After a counted ACK gRPC enforces MAX_CONCURRENT_STREAMS itself and the scanner stops
// parsing: any further count would only repeat gRPC's, and bytes pass at no cost.
#pragma once

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace leash::controlplane {

class H2SettingsGate {
 public:
  enum class State {
    kScanning,  // before the ACK, under the limit: every byte scanned may pass
    kHolding,   // the limit was reached before the ACK: bytes from released() on are held
    kOpen,      // the ACK was counted: everything passes, nothing is parsed
    kRefused,   // the connection must be cut (why() says why)
  };

  explicit H2SettingsGate(int max_streams_before_ack)
      : max_streams_before_ack_(max_streams_before_ack) {}

  // Scans the next bytes the client sent, in order; returns the state after them.
  State Scan(absl::string_view bytes);
  // The relay has passed bytes from the server to the client: its SETTINGS (the first frame a
  // server writes) are out, so a client ACK read from now on acknowledges them.
  void ServerSettingsSent() { server_settings_sent_ = true; }

  State state() const { return state_; }
  // How many of the bytes scanned so far, from the first, may be forwarded to gRPC. Never
  // shrinks: the start of a frame header is held until the header is whole, so a header that
  // turns out to open one stream too many has not been let through in part.
  uint64_t released() const {
    switch (state_) {
      case State::kHolding:
        return hold_at_;
      case State::kScanning:
        return scanned_ - header_seen_;
      default:
        return scanned_;
    }
  }
  uint64_t scanned() const { return scanned_; }
  int new_streams() const { return new_streams_; }
  // Why the connection was refused; "" otherwise.
  const std::string& why() const { return why_; }

 private:
  void Refuse(std::string why);
  // A whole frame header has been read; `header_start` is its offset in the stream.
  void OnFrameHeader(uint64_t header_start);

  const int max_streams_before_ack_;
  State state_ = State::kScanning;
  bool server_settings_sent_ = false;
  uint64_t scanned_ = 0;
  uint64_t hold_at_ = 0;
  size_t preface_seen_ = 0;
  uint8_t header_[9] = {};
  size_t header_seen_ = 0;
  uint32_t payload_left_ = 0;
  uint32_t highest_stream_ = 0;
  int new_streams_ = 0;
  std::string why_;
};

}  // namespace leash::controlplane
