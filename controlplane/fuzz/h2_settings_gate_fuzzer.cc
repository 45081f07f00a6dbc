// Fuzz target: the HTTP/2 settings gate of the tools socket's relay, fed an agent's bytes in
// pieces whose sizes the input chooses. Never a crash; what it releases never exceeds what it
// scanned, and never shrinks; a refusal is final.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "absl/strings/string_view.h"
#include "controlplane/h2_settings_gate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  using leash::controlplane::H2SettingsGate;
  H2SettingsGate gate(data[0] % 16);
  const size_t piece = 1 + data[1] % 64;
  absl::string_view rest(reinterpret_cast<const char*>(data + 2), size - 2);
  uint64_t released = 0;
  bool refused = false;
  while (!rest.empty()) {
    if (rest.size() % 7 == 0) gate.ServerSettingsSent();
    const absl::string_view now = rest.substr(0, piece);
    rest.remove_prefix(now.size());
    const H2SettingsGate::State state = gate.Scan(now);
    if (refused && state != H2SettingsGate::State::kRefused) std::abort();
    refused = state == H2SettingsGate::State::kRefused;
    if (gate.released() > gate.scanned() || gate.released() < released) std::abort();
    released = gate.released();
  }
  return 0;
}
