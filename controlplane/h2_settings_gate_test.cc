#include "controlplane/h2_settings_gate.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace leash::controlplane {
namespace {

using State = H2SettingsGate::State;

const std::string kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

std::string Frame(uint8_t type, uint8_t flags, uint32_t stream, uint32_t length,
                  const std::string& payload = "") {
  std::string out;
  out += static_cast<char>((length >> 16) & 0xff);
  out += static_cast<char>((length >> 8) & 0xff);
  out += static_cast<char>(length & 0xff);
  out += static_cast<char>(type);
  out += static_cast<char>(flags);
  out += static_cast<char>((stream >> 24) & 0xff);
  out += static_cast<char>((stream >> 16) & 0xff);
  out += static_cast<char>((stream >> 8) & 0xff);
  out += static_cast<char>(stream & 0xff);
  return out + (payload.empty() ? std::string(length, 'x') : payload);
}
std::string Headers(uint32_t stream) { return Frame(0x1, 0x4, stream, 5); }
std::string Settings() { return Frame(0x4, 0, 0, 6); }
std::string SettingsAck() { return Frame(0x4, 0x1, 0, 0); }

// Feeds `bytes` in pieces of `piece` bytes; returns the final state.
State FeedInPieces(H2SettingsGate& gate, const std::string& bytes, size_t piece) {
  for (size_t at = 0; at < bytes.size(); at += piece) {
    gate.Scan(absl::string_view(bytes).substr(at, piece));
  }
  return gate.state();
}

std::string Streams(uint32_t first, int count) {
  std::string out;
  for (int i = 0; i < count; ++i) out += Headers(first + 2 * i) + Frame(0x0, 0, first + 2 * i, 11);
  return out;
}

struct Case {
  std::string name;
  std::string bytes;
  bool settings_sent_first;
  State want;
  int want_streams;
  // Bytes the gate may release, from the first; -1: all scanned.
  int64_t want_released;
};

TEST(H2SettingsGate, ScansClientFramesInEveryPieceSize) {
  const std::string start = kPreface + Settings();
  const std::string eight = start + Streams(1, 8);
  const std::vector<Case> cases = {
      {"eight streams before the ACK pass", eight, true, State::kScanning, 8, -1},
      {"the ninth stream before the ACK is held from its frame on", eight + Streams(17, 3), true,
       State::kHolding, 11, static_cast<int64_t>(eight.size())},
      {"an ACK after the ninth stream releases what was held", eight + Streams(17, 3) + SettingsAck(),
       true, State::kOpen, 11, -1},
      {"an ACK before the streams opens the connection", start + SettingsAck() + Streams(1, 40),
       true, State::kOpen, 0, -1},
      {"an ACK written before the server's SETTINGS went out counts for nothing",
       start + SettingsAck() + Streams(1, 9), false, State::kHolding, 9,
       static_cast<int64_t>((start + SettingsAck() + Streams(1, 8)).size())},
      {"a SETTINGS frame without the ACK flag is no ACK", eight + Settings() + Streams(17, 1), true,
       State::kHolding, 9, static_cast<int64_t>((eight + Settings()).size())},
      {"a reused or lower stream id opens nothing", eight + Headers(15) + Headers(3) + Headers(1),
       true, State::kScanning, 8, -1},
      {"CONTINUATION and unknown frame types open nothing",
       eight + Frame(0x9, 0x4, 99, 4) + Frame(0xfa, 0, 101, 7) + Frame(0x8, 0, 0, 4), true,
       State::kScanning, 8, -1},
      {"a payload that says HEADERS is skipped, not parsed",
       start + Frame(0x0, 0, 1, 9, Frame(0x1, 0x4, 3, 0)) + Streams(5, 8), true, State::kScanning,
       8, -1},
      {"a huge frame length is skipped through", start + Frame(0x0, 0, 1, 0xffffff), true,
       State::kScanning, 0, -1},
      {"a wrong preface is refused", "GET / HTTP/1.1\r\n\r\n", true, State::kRefused, 0, 0},
      {"a preface wrong in its last byte is refused",
       kPreface.substr(0, 23) + "X" + Streams(1, 1), true, State::kRefused, 0, 0},
      {"a stream id with the reserved bit set counts by its 31 bits",
       eight + Frame(0x1, 0x4, 0x80000000u | 15, 0) + Frame(0x1, 0x4, 0x80000000u | 17, 0), true,
       State::kHolding, 9, static_cast<int64_t>((eight + Frame(0x1, 0x4, 15, 0)).size())},
  };
  for (const Case& c : cases) {
    for (size_t piece : {size_t{1}, size_t{2}, size_t{5}, size_t{9}, size_t{13}, size_t{24},
                         size_t{4096}}) {
      H2SettingsGate gate(8);
      if (c.settings_sent_first) gate.ServerSettingsSent();
      EXPECT_EQ(FeedInPieces(gate, c.bytes, piece), c.want) << c.name << ", pieces of " << piece;
      EXPECT_EQ(gate.new_streams(), c.want_streams) << c.name << ", pieces of " << piece;
      if (c.want == State::kRefused) {
        EXPECT_NE(gate.why(), "") << c.name;
        continue;
      }
      const uint64_t want_released =
          c.want_released < 0 ? c.bytes.size() : static_cast<uint64_t>(c.want_released);
      EXPECT_EQ(gate.released(), want_released) << c.name << ", pieces of " << piece;
    }
  }
}

// The relay's order: the ACK is only seen after ServerSettingsSent if it arrives after it.
TEST(H2SettingsGate, AnAckReadAfterTheServerSettingsWentOutCounts) {
  H2SettingsGate gate(8);
  gate.Scan(kPreface + Settings() + SettingsAck());
  EXPECT_EQ(gate.state(), State::kScanning);
  gate.ServerSettingsSent();
  gate.Scan(Streams(1, 9));
  EXPECT_EQ(gate.state(), State::kHolding);
  gate.Scan(SettingsAck());
  EXPECT_EQ(gate.state(), State::kOpen);
  EXPECT_EQ(gate.released(), gate.scanned());
}

// A frame header split across reads is not released in part: the part could be the start of
// the frame that opens one stream too many.
TEST(H2SettingsGate, APartFrameHeaderIsHeldUntilItIsWhole) {
  H2SettingsGate gate(8);
  gate.ServerSettingsSent();
  const std::string eight = kPreface + Settings() + Streams(1, 8);
  gate.Scan(eight + Headers(17).substr(0, 4));
  EXPECT_EQ(gate.released(), eight.size());
  gate.Scan(Headers(17).substr(4));
  EXPECT_EQ(gate.state(), State::kHolding);
  EXPECT_EQ(gate.released(), eight.size());
}

// Past the ACK nothing is parsed: not even a malformed byte stream stops the bytes.
TEST(H2SettingsGate, AfterTheAckBytesPassUnparsed) {
  H2SettingsGate gate(1);
  gate.ServerSettingsSent();
  const std::string before = kPreface + SettingsAck();
  gate.Scan(before);
  ASSERT_EQ(gate.state(), State::kOpen);
  gate.Scan("garbage that is no frame at all");
  gate.Scan(Streams(1, 100));
  EXPECT_EQ(gate.state(), State::kOpen);
  EXPECT_EQ(gate.released(), before.size() + 31 + Streams(1, 100).size());
}

}  // namespace
}  // namespace leash::controlplane
