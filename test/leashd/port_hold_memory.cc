// What leashd's hold on the proxy's ports costs the kernel: ProxyPortHold over the whole range
// in a fresh network namespace (so no other process's ports interfere), with the slab caches a
// socket occupies read from /proc/slabinfo before and after. Root. Prints one line per cache
// and a total; docs/PERFORMANCE.md quotes it.
//
//   bazel run //test/leashd:port_hold_memory
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "controlplane/proxy_port_hold.h"

namespace {

struct Cache {
  long objects = 0;
  long size = 0;
};

std::map<std::string, Cache> Slabs() {
  std::map<std::string, Cache> out;
  std::ifstream in("/proc/slabinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string name;
    Cache cache;
    long total = 0;
    fields >> name >> cache.objects >> total >> cache.size;
    if (name == "TCP" || name == "TCPv6" || name == "sock_inode_cache" || name == "filp" ||
        name == "dentry") {
      out[name] = cache;
    }
  }
  return out;
}

}  // namespace

int main() {
  if (unshare(CLONE_NEWNET) != 0) {
    std::perror("unshare(CLONE_NEWNET) (run as root)");
    return 1;
  }
  if (std::system("ip link set lo up") != 0) return 1;
  const std::map<std::string, Cache> before = Slabs();
  leash::controlplane::ProxyPortHold hold;
  const auto missing = hold.TakeMissing();
  const std::map<std::string, Cache> after = Slabs();
  if (!missing.empty()) {
    std::fprintf(stderr, "missing: %s\n",
                 leash::controlplane::ProxyPortHold::Describe(missing).c_str());
    return 1;
  }
  long total = 0;
  for (const auto& [name, cache] : after) {
    const long added = cache.objects - before.at(name).objects;
    total += added * cache.size;
    std::printf("%-16s %+6ld objects x %4ld bytes\n", name.c_str(), added, cache.size);
  }
  std::printf("%zu sockets held: %.1f MiB of slab (%.0f bytes per socket)\n", hold.total(),
              total / 1048576.0, static_cast<double>(total) / hold.total());
  return 0;
}
