#include "engine/process_cmdline.h"

#include <string>

#include "engine/detectors.h"
#include "engine/mask.h"

namespace leash::engine {

std::string LoggedCmdline(absl::string_view raw, const tools::Inspector& inspector) {
  while (!raw.empty() && raw.back() == '\0') raw.remove_suffix(1);
  std::string joined(raw);
  for (char& c : joined) {
    if (c == '\0') c = ' ';
  }
  std::string masked = tools::MaskSensitive(inspector, joined);
  if (masked.size() <= kMaxCmdlineBytes) return masked;
  std::string cut(tools::Utf8Prefix(masked, kMaxCmdlineBytes - kCmdlineCutMarker.size()));
  cut.append(kCmdlineCutMarker.data(), kCmdlineCutMarker.size());
  return cut;
}

}  // namespace leash::engine
