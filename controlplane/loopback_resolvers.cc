#include "controlplane/loopback_resolvers.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/read_file.h"
#include "controlplane/resolv_conf.h"

namespace leash::controlplane {
namespace {

constexpr uint32_t kDnsPort = 53;
constexpr uint32_t kTcpListen = 0x0A;  // include/net/tcp_states.h TCP_LISTEN
constexpr uint32_t kUnconnected = 0x07;  // TCP_CLOSE: a UDP socket with no peer

bool IsWildcard(const engine::IpAddress& address) {
  const int len = address.family == engine::IpAddress::Family::kV4 ? 4 : 16;
  return std::all_of(address.bytes.begin(), address.bytes.begin() + len,
                     [](uint8_t b) { return b == 0; });
}

// "0100007F" (IPv4) or 32 hex digits (IPv6): the kernel prints each 32-bit word of the address
// as a host-order number, so on this little-endian machine each word's bytes come reversed.
bool ParseHexAddress(absl::string_view hex, engine::IpAddress* out) {
  if (hex.size() != 8 && hex.size() != 32) return false;
  out->family = hex.size() == 8 ? engine::IpAddress::Family::kV4 : engine::IpAddress::Family::kV6;
  out->bytes.fill(0);
  for (size_t word = 0; word < hex.size() / 8; ++word) {
    uint32_t value = 0;
    if (!absl::SimpleHexAtoi(hex.substr(word * 8, 8), &value)) return false;
    for (int i = 0; i < 4; ++i) {
      out->bytes[word * 4 + i] = static_cast<uint8_t>(value >> (8 * i));
    }
  }
  return true;
}

// "ADDRESS:PORT" with both in hex.
bool ParseEndpoint(absl::string_view text, engine::IpAddress* address, uint32_t* port) {
  const size_t colon = text.rfind(':');
  if (colon == absl::string_view::npos) return false;
  return ParseHexAddress(text.substr(0, colon), address) &&
         absl::SimpleHexAtoi(text.substr(colon + 1), port);
}

}  // namespace

std::vector<engine::IpAddress> Port53Sockets(absl::string_view proc_net_text, bool tcp) {
  std::vector<engine::IpAddress> out;
  for (absl::string_view line : absl::StrSplit(proc_net_text, '\n')) {
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    // sl local_address rem_address st ...
    if (fields.size() < 4) continue;
    engine::IpAddress local, remote;
    uint32_t local_port = 0, remote_port = 0, state = 0;
    if (!ParseEndpoint(fields[1], &local, &local_port) ||
        !ParseEndpoint(fields[2], &remote, &remote_port) ||
        !absl::SimpleHexAtoi(fields[3], &state)) {
      continue;  // the header line
    }
    if (local_port != kDnsPort) continue;
    if (tcp ? state != kTcpListen : (state != kUnconnected || remote_port != 0)) continue;
    if (std::find(out.begin(), out.end(), local) == out.end()) out.push_back(local);
  }
  return out;
}

std::vector<LoopbackResolver> MergeLoopbackResolvers(
    const std::vector<engine::IpAddress>& resolv_conf,
    const std::vector<engine::IpAddress>& udp_sockets,
    const std::vector<engine::IpAddress>& tcp_sockets) {
  std::vector<LoopbackResolver> out;
  auto entry = [&out](const engine::IpAddress& raw) -> LoopbackResolver& {
    const engine::IpAddress address = engine::UnmapV4(raw);
    for (LoopbackResolver& r : out) {
      if (r.address == address) return r;
    }
    out.push_back(LoopbackResolver{address});
    return out.back();
  };
  for (const engine::IpAddress& address : resolv_conf) {
    if (engine::IsLoopbackAddress(address)) entry(address).in_resolv_conf = true;
  }
  for (const auto* sockets : {&udp_sockets, &tcp_sockets}) {
    for (const engine::IpAddress& address : *sockets) {
      const engine::IpAddress unmapped = engine::UnmapV4(address);
      if (!engine::IsLoopbackAddress(unmapped) && !IsWildcard(unmapped)) continue;
      LoopbackResolver& r = entry(unmapped);
      (sockets == &udp_sockets ? r.udp : r.tcp) = true;
    }
  }
  return out;
}

absl::StatusOr<std::vector<LoopbackResolver>> FindLoopbackResolvers(
    const std::string& resolv_conf_path, const std::string& proc_net_dir) {
  absl::StatusOr<std::vector<engine::IpAddress>> resolv_conf = HostResolvers(resolv_conf_path);
  if (!resolv_conf.ok()) return resolv_conf.status();
  std::vector<engine::IpAddress> sockets[2];  // udp, tcp
  for (const char* name : {"udp", "udp6", "tcp", "tcp6"}) {
    const std::string path = absl::StrCat(proc_net_dir, "/", name);
    absl::StatusOr<std::string> text = base::ReadFile(path);
    // A kernel without IPv6 has no tcp6/udp6: no sockets there.
    if (absl::IsNotFound(text.status()) && absl::string_view(name).back() == '6') continue;
    if (!text.ok()) return text.status();
    const bool tcp = name[0] == 't';
    for (const engine::IpAddress& address : Port53Sockets(*text, tcp)) {
      sockets[tcp].push_back(address);
    }
  }
  return MergeLoopbackResolvers(*resolv_conf, sockets[0], sockets[1]);
}

std::string DescribeLoopbackResolver(const LoopbackResolver& resolver) {
  std::vector<std::string> where;
  if (resolver.in_resolv_conf) where.push_back("resolv.conf");
  if (IsWildcard(resolver.address)) where.push_back("every address");
  std::vector<std::string> listening;
  if (resolver.udp) listening.push_back("udp");
  if (resolver.tcp) listening.push_back("tcp");
  if (listening.empty()) listening.push_back("nothing listening");
  std::string detail = absl::StrJoin(where, ", ");
  absl::StrAppend(&detail, detail.empty() ? "" : "; ", absl::StrJoin(listening, ", "));
  return absl::StrCat(engine::FormatIpAddress(resolver.address), " (", detail, ")");
}

}  // namespace leash::controlplane
