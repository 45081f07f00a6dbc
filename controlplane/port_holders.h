// Who holds a port of the proxy range that leashd could not: the owning UID and processes of
// every other socket bound there, read from the kernel's socket tables (/proc/net/tcp, tcp6,
// udp, udp6: local port, UID, inode) and each process's descriptors (/proc/<pid>/fd ->
// socket:[inode]). A TCP socket that is bound but neither listening nor connected is not in
// /proc/net/tcp (only sock_diag's bound-inactive dump, `ss -tan state bound-inactive`, shows
// it): such a holder is not found, and the caller says so. Said in leashd's log, in a refused subject's `leash status` detail and in
// the decision log, so an operator can find and stop the squatter.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace leash::controlplane {

struct PortHolder {
  uint32_t uid = 0;
  // The processes with a descriptor of one of its sockets (none found: the socket outlived
  // every process, or a process in another PID namespace holds it).
  std::vector<pid_t> pids;
  std::string commands;  // "squatter" or "a, b": /proc/<pid>/comm, joined
  // The ports it holds, per protocol.
  std::set<uint16_t> tcp_ports;
  std::set<uint16_t> udp_ports;
};

// The holders of the (udp, port) pairs in `wanted`, leaving out sockets this process holds
// itself (and so its children's inherited copies). `proc` is the procfs root ("/proc"); the
// socket tables read are those of this process's network namespace.
std::vector<PortHolder> FindPortHolders(const std::set<std::pair<bool, uint16_t>>& wanted,
                                        const std::string& proc = "/proc");

// "uid 1001 (mallory) pid 4242 (squat) holds tcp 18000-18998, udp 18000-18999": one clause per
// holder, ranges folded; "" when there is none. `account_name` turns a UID into a name ("" when
// it has none).
std::string DescribePortHolders(const std::vector<PortHolder>& holders,
                                std::string (*account_name)(uint32_t) = nullptr);

// Ports folded into ranges: "18000-18998, 18999".
std::string FoldPorts(const std::set<uint16_t>& ports);

}  // namespace leash::controlplane
