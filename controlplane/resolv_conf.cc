#include "controlplane/resolv_conf.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "base/atomic_file.h"
#include "base/read_file.h"

namespace leash::controlplane {

std::vector<engine::IpAddress> ParseResolvConf(absl::string_view text) {
  std::vector<engine::IpAddress> resolvers;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    std::vector<absl::string_view> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (words.size() < 2 || words[0] != "nameserver") continue;
    if (std::optional<engine::IpAddress> address = engine::ParseIpAddress(words[1])) {
      resolvers.push_back(*address);
    }
  }
  return resolvers;
}

absl::StatusOr<std::vector<engine::IpAddress>> HostResolvers(const std::string& path) {
  absl::StatusOr<std::string> text = base::ReadFile(path);
  if (absl::IsNotFound(text.status())) return std::vector<engine::IpAddress>();
  if (!text.ok()) return text.status();
  return ParseResolvConf(*text);
}

}  // namespace leash::controlplane
