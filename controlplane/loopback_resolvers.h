// The DNS servers this host answers on loopback, for `leash status` (docs/ARCHITECTURE.md,
// rule N15: DNS of a subject to any loopback address goes to its filter, or is refused). A
// host's local resolver answers on more than resolv.conf names — systemd-resolved on
// 127.0.0.53 and 127.0.0.54, dnsmasq or unbound on 127.0.0.1 — so the operator is shown both
// resolv.conf's loopback nameservers and every socket bound to port 53 on a loopback or
// wildcard address, as the kernel's socket tables (/proc/net/{tcp,udp}{,6}) list them.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/ip_address.h"

namespace leash::controlplane {

struct LoopbackResolver {
  // A loopback address, or a wildcard one (0.0.0.0, ::) whose socket answers on every address.
  engine::IpAddress address;
  bool in_resolv_conf = false;
  bool udp = false;  // a UDP socket is bound to port 53 there
  bool tcp = false;  // a TCP socket listens on port 53 there
};

// The local addresses of the sockets on port 53 in the text of one of /proc/net/tcp, tcp6, udp,
// udp6: listening ones (state 0A) for TCP, unconnected ones (state 07, no remote port) for
// UDP. Lines that do not parse are skipped.
std::vector<engine::IpAddress> Port53Sockets(absl::string_view proc_net_text, bool tcp);

// Merges resolv.conf's nameservers (only the loopback ones are kept) with the port-53 sockets
// (only those on a loopback or wildcard address): one entry per address, resolv.conf's first
// in its order, then the rest by the order given.
std::vector<LoopbackResolver> MergeLoopbackResolvers(
    const std::vector<engine::IpAddress>& resolv_conf,
    const std::vector<engine::IpAddress>& udp_sockets,
    const std::vector<engine::IpAddress>& tcp_sockets);

// Reads `resolv_conf_path` (a missing file names none) and the four socket tables under
// `proc_net_dir` (the calling thread's network namespace by default). An error names the file
// that could not be read.
absl::StatusOr<std::vector<LoopbackResolver>> FindLoopbackResolvers(
    const std::string& resolv_conf_path = "/etc/resolv.conf",
    const std::string& proc_net_dir = "/proc/thread-self/net");

// "127.0.0.54 (udp, tcp)", "127.0.0.53 (resolv.conf; udp, tcp)", "0.0.0.0 (every address; udp)".
std::string DescribeLoopbackResolver(const LoopbackResolver& resolver);

}  // namespace leash::controlplane
