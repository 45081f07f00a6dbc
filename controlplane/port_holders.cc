#include "controlplane/port_holders.h"

#include <dirent.h>
#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace leash::controlplane {
namespace {

struct SocketEntry {
  bool udp = false;
  uint16_t port = 0;
  uint32_t uid = 0;
};

// "socket:[12345]" -> 12345.
bool SocketInode(const std::string& link, uint64_t* inode) {
  absl::string_view text = link;
  if (!absl::ConsumePrefix(&text, "socket:[") || !absl::ConsumeSuffix(&text, "]")) return false;
  return absl::SimpleAtoi(text, inode);
}

// The socket inodes among /proc/<pid>/fd.
std::vector<uint64_t> SocketsOf(const std::string& fd_dir) {
  std::vector<uint64_t> inodes;
  DIR* dir = opendir(fd_dir.c_str());
  if (dir == nullptr) return inodes;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    char target[64];
    const std::string path = absl::StrCat(fd_dir, "/", entry->d_name);
    const ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
    if (n <= 0) continue;
    uint64_t inode = 0;
    if (SocketInode(std::string(target, static_cast<size_t>(n)), &inode)) inodes.push_back(inode);
  }
  closedir(dir);
  return inodes;
}

// One of /proc/net/{tcp,tcp6,udp,udp6}: inode -> (protocol, local port, uid) of the wanted
// ports.
void ReadTable(const std::string& path, bool udp, const std::set<std::pair<bool, uint16_t>>& wanted,
               std::map<uint64_t, SocketEntry>& out) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    const std::vector<absl::string_view> fields =
        absl::StrSplit(line, ' ', absl::SkipWhitespace());
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
    if (fields.size() < 10) continue;
    const size_t colon = fields[1].rfind(':');
    if (colon == absl::string_view::npos) continue;
    uint32_t port = 0, uid = 0;
    uint64_t inode = 0;
    if (!absl::SimpleHexAtoi(fields[1].substr(colon + 1), &port) ||
        !absl::SimpleAtoi(fields[7], &uid) || !absl::SimpleAtoi(fields[9], &inode) ||
        inode == 0) {
      continue;
    }
    if (wanted.count({udp, static_cast<uint16_t>(port)}) == 0) continue;
    out[inode] = SocketEntry{udp, static_cast<uint16_t>(port), uid};
  }
}

std::string Comm(const std::string& proc, pid_t pid) {
  std::ifstream in(absl::StrCat(proc, "/", pid, "/comm"));
  std::string comm;
  std::getline(in, comm);
  return comm;
}

}  // namespace

std::vector<PortHolder> FindPortHolders(const std::set<std::pair<bool, uint16_t>>& wanted,
                                        const std::string& proc) {
  if (wanted.empty()) return {};
  std::map<uint64_t, SocketEntry> sockets;
  for (const auto& [name, udp] : {std::pair{"tcp", false}, std::pair{"tcp6", false},
                                  std::pair{"udp", true}, std::pair{"udp6", true}}) {
    ReadTable(absl::StrCat(proc, "/self/net/", name), udp, wanted, sockets);
  }
  // leashd's own sockets (and the copies its sidecars inherited) are not a holder.
  for (uint64_t inode : SocketsOf(absl::StrCat(proc, "/self/fd"))) sockets.erase(inode);
  if (sockets.empty()) return {};
  // inode -> the processes holding it.
  std::map<uint64_t, std::set<pid_t>> owners;
  const pid_t self = getpid();
  if (DIR* dir = opendir(proc.c_str()); dir != nullptr) {
    while (dirent* entry = readdir(dir)) {
      int pid = 0;
      if (!absl::SimpleAtoi(entry->d_name, &pid) || pid == self) continue;
      for (uint64_t inode : SocketsOf(absl::StrCat(proc, "/", pid, "/fd"))) {
        if (sockets.count(inode)) owners[inode].insert(pid);
      }
    }
    closedir(dir);
  }
  // One holder per (uid, processes).
  std::map<std::pair<uint32_t, std::set<pid_t>>, PortHolder> by_owner;
  for (const auto& [inode, socket] : sockets) {
    const std::set<pid_t>& pids = owners[inode];
    PortHolder& holder = by_owner[{socket.uid, pids}];
    holder.uid = socket.uid;
    holder.pids.assign(pids.begin(), pids.end());
    (socket.udp ? holder.udp_ports : holder.tcp_ports).insert(socket.port);
  }
  std::vector<PortHolder> holders;
  for (auto& [key, holder] : by_owner) {
    std::vector<std::string> comms;
    for (pid_t pid : holder.pids) {
      const std::string comm = Comm(proc, pid);
      if (!comm.empty() && std::find(comms.begin(), comms.end(), comm) == comms.end()) {
        comms.push_back(comm);
      }
    }
    holder.commands = absl::StrJoin(comms, ", ");
    holders.push_back(std::move(holder));
  }
  return holders;
}

std::string FoldPorts(const std::set<uint16_t>& ports) {
  std::vector<std::string> parts;
  for (auto it = ports.begin(); it != ports.end();) {
    const uint16_t first = *it;
    uint16_t last = first;
    ++it;
    while (it != ports.end() && *it == last + 1) last = *it++;
    parts.push_back(first == last ? absl::StrCat(first) : absl::StrCat(first, "-", last));
  }
  return absl::StrJoin(parts, ", ");
}

std::string DescribePortHolders(const std::vector<PortHolder>& holders,
                                std::string (*account_name)(uint32_t)) {
  std::vector<std::string> clauses;
  for (const PortHolder& holder : holders) {
    std::string who = absl::StrCat("uid ", holder.uid);
    if (account_name != nullptr) {
      if (const std::string name = account_name(holder.uid); !name.empty()) {
        absl::StrAppend(&who, " (", name, ")");
      }
    }
    if (holder.pids.empty()) {
      absl::StrAppend(&who, " (no process found: another PID namespace, or closing)");
    } else {
      absl::StrAppend(&who, holder.pids.size() == 1 ? " pid " : " pids ",
                      absl::StrJoin(holder.pids, ","));
      if (!holder.commands.empty()) absl::StrAppend(&who, " (", holder.commands, ")");
    }
    std::vector<std::string> held;
    if (!holder.tcp_ports.empty()) {
      held.push_back(absl::StrCat("tcp ", FoldPorts(holder.tcp_ports)));
    }
    if (!holder.udp_ports.empty()) {
      held.push_back(absl::StrCat("udp ", FoldPorts(holder.udp_ports)));
    }
    clauses.push_back(absl::StrCat(who, " holds ", absl::StrJoin(held, ", ")));
  }
  return absl::StrJoin(clauses, "; ");
}

}  // namespace leash::controlplane
