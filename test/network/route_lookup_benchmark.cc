// What Leash's policy-routing rules (controlplane/route_rules.h) cost a route lookup, beside a
// baseline measured in the same run and the same fresh network namespace (run as root):
//   bazel run -c opt //test/network:route_lookup_benchmark -- [--lookups=20000] [--rounds=7]
//
// 1,000 subjects, each its own UID and one subordinate range of 65,536, applied by the real
// InboundRouting over rtnetlink (2,000 refusals per family behind the gates), in one fresh
// namespace, the baseline in another without rules, measured round by round in turn. Each
// lookup is one RTM_GETROUTE carrying a mark and a UID, the way the kernel looks up a socket's
// route, so the figure includes a netlink round trip and the difference is the rule walk:
//   unmarked: a lookup without Leash's mark (every connect(), every UDP send of the host),
//   marked:   the SYN-ACK of a host service (a UID below the agents') to a peer off the host,
//   in-span:  the same for an unleashed UID inside the agents' span (lowest to highest UID of
//             any refusal), which the hull gate cannot skip: it walks every refusal,
//   refused:  a leashed listener's SYN-ACK to a peer off the host (the last subject's range):
//             the counted refusal's route, out of the refusal device.
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "controlplane/inbound_routing.h"
#include "controlplane/rtnl_route_rules.h"
#include "controlplane/testing/fake_netfilter.h"
#include "test/fixtures/netns.h"
#include "test/fixtures/sample_stats.h"
#include "test/fixtures/temp_dir.h"

namespace leash {
namespace {

using controlplane::kInboundMark;

constexpr uint32_t kUnleashedUid = 5000;
constexpr uint32_t kInSpanUid = 500000;  // between the subjects' own UIDs and their ranges
constexpr int kSubjects = 1000;
uint32_t SubordinateFirst(int i) { return 1000000u + static_cast<uint32_t>(i) * 65536u; }

// One RTM_GETROUTE to 192.0.2.99 with `mark` and `uid`: 1 when a route came back, 2 when it
// goes out of the refusal device (a counted refusal), 0 when the kernel refused one (EACCES: a
// prohibit rule).
class Lookup {
 public:
  Lookup() : socket_(mnl_socket_open(NETLINK_ROUTE)) {
    if (socket_ == nullptr || mnl_socket_bind(socket_, 0, MNL_SOCKET_AUTOPID) < 0) {
      std::perror("netlink");
      std::exit(1);
    }
  }
  ~Lookup() { mnl_socket_close(socket_); }
  int Run(uint32_t mark, uint32_t uid) {
    char buffer[MNL_SOCKET_BUFFER_SIZE];
    nlmsghdr* header = mnl_nlmsg_put_header(buffer);
    header->nlmsg_type = RTM_GETROUTE;
    header->nlmsg_flags = NLM_F_REQUEST;
    header->nlmsg_seq = ++seq_;
    auto* rtm = static_cast<rtmsg*>(mnl_nlmsg_put_extra_header(header, sizeof(rtmsg)));
    rtm->rtm_family = AF_INET;
    rtm->rtm_dst_len = 32;
    in_addr dst;
    inet_pton(AF_INET, "192.0.2.99", &dst);
    mnl_attr_put(header, RTA_DST, sizeof(dst), &dst);
    if (mark != 0) mnl_attr_put_u32(header, RTA_MARK, mark);
    mnl_attr_put_u32(header, RTA_UID, uid);
    if (mnl_socket_sendto(socket_, header, header->nlmsg_len) < 0) return -1;
    const ssize_t n = mnl_socket_recvfrom(socket_, buffer, sizeof(buffer));
    if (n < 0) return -1;
    const auto* reply = reinterpret_cast<const nlmsghdr*>(buffer);
    if (reply->nlmsg_type == NLMSG_ERROR) {
      return -static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(reply))->error == EACCES ? 0 : -1;
    }
    if (reply->nlmsg_type != RTM_NEWROUTE) return -1;
    uint32_t oif = 0;
    mnl_attr_parse(
        reply, sizeof(rtmsg),
        [](const nlattr* attr, void* data) {
          if (mnl_attr_get_type(attr) == RTA_OIF) {
            *static_cast<uint32_t*>(data) = mnl_attr_get_u32(attr);
          }
          return MNL_CB_OK;
        },
        &oif);
    if (!device_looked_up_) {  // once: the namespace's device is made before the first lookup
      refusal_device_ = if_nametoindex(controlplane::kRefusalDevice);
      device_looked_up_ = true;
    }
    return oif != 0 && oif == refusal_device_ ? 2 : 1;
  }

 private:
  mnl_socket* socket_;
  uint32_t seq_ = 0;
  bool device_looked_up_ = false;
  uint32_t refusal_device_ = 0;
};

struct Case {
  const char* name;
  uint32_t mark;
  uint32_t uid;
  int expect;  // as Lookup::Run answers
};

// Median nanoseconds per lookup over `rounds` rounds of `lookups` each, for `c` without rules
// (`plain`) and with them (`ruled`), the two interleaved round by round so that the machine's
// load drifts alike for both.
std::pair<double, double> Measure(Lookup& plain, Lookup& ruled, const Case& c, int lookups,
                                  int rounds) {
  std::vector<double> samples[2];
  for (int r = 0; r < rounds; ++r) {
    for (int side = 0; side < 2; ++side) {
      Lookup& lookup = side == 0 ? plain : ruled;
      const int expect = side == 0 ? 1 : c.expect;
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < lookups; ++i) {
        if (lookup.Run(c.mark, c.uid) != expect) {
          std::fprintf(stderr, "%s: unexpected answer\n", c.name);
          std::exit(1);
        }
      }
      const std::chrono::duration<double, std::nano> took =
          std::chrono::steady_clock::now() - start;
      samples[side].push_back(took.count() / lookups);
    }
  }
  return {testing::Median(samples[0]), testing::Median(samples[1])};
}

// A fresh namespace with a link to 192.0.2.0/24, or exits.
std::unique_ptr<testing::NetNamespace> World() {
  absl::StatusOr<std::unique_ptr<testing::NetNamespace>> ns = testing::NetNamespace::Create();
  if (!ns.ok()) std::fprintf(stderr, "%s\n", ns.status().ToString().c_str()), std::exit(1);
  if (absl::Status s = (*ns)->AddVethPair({"192.0.2.10/24"}, {"192.0.2.11/24"}); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    std::exit(1);
  }
  return std::move(*ns);
}

int Main(int argc, char** argv) {
  int lookups = 20000;
  int rounds = 7;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (absl::ConsumePrefix(&arg, "--lookups=")) (void)absl::SimpleAtoi(arg, &lookups);
    if (absl::ConsumePrefix(&arg, "--rounds=")) (void)absl::SimpleAtoi(arg, &rounds);
  }
  if (geteuid() != 0) {
    std::fprintf(stderr, "route_lookup_benchmark needs root (network namespaces)\n");
    return 1;
  }
  // The baseline's namespace has no rules; the other gets 1,000 subjects'.
  std::unique_ptr<testing::NetNamespace> plain_ns = World();
  std::unique_ptr<testing::NetNamespace> ruled_ns = World();
  std::unique_ptr<Lookup> plain;
  {
    absl::StatusOr<testing::NetNamespace::Entered> entered = plain_ns->Enter();
    if (!entered.ok()) return std::fprintf(stderr, "%s\n", entered.status().ToString().c_str()), 1;
    plain = std::make_unique<Lookup>();
  }
  absl::StatusOr<testing::NetNamespace::Entered> entered = ruled_ns->Enter();
  if (!entered.ok()) return std::fprintf(stderr, "%s\n", entered.status().ToString().c_str()), 1;
  absl::StatusOr<std::unique_ptr<testing::TempDir>> dir = testing::TempDir::Create();
  if (!dir.ok()) return std::fprintf(stderr, "%s\n", dir.status().ToString().c_str()), 1;
  absl::StatusOr<std::unique_ptr<controlplane::RtnlRouteRules>> kernel =
      controlplane::RtnlRouteRules::Open();
  if (!kernel.ok()) return std::fprintf(stderr, "%s\n", kernel.status().ToString().c_str()), 1;
  controlplane::InboundRouting routing(kernel->get(), (*dir)->path() + "/saved");
  Lookup ruled;

  const uint32_t refused_uid = SubordinateFirst(kSubjects - 1) + 10;
  const Case cases[] = {{"unmarked", 0, kUnleashedUid, 1},
                        {"marked", kInboundMark, kUnleashedUid, 1},
                        {"in-span", kInboundMark, kInSpanUid, 1},
                        {"refused", kInboundMark, refused_uid, 2}};

  std::vector<controlplane::NetfilterSubject> subjects;
  for (int i = 0; i < kSubjects; ++i) {
    controlplane::NetfilterSubject subject = controlplane::testing::MakeSubject(200000 + i, 18001);
    subject.subordinate_uids = {{SubordinateFirst(i), SubordinateFirst(i) + 65535}};
    subjects.push_back(subject);
  }
  const auto start = std::chrono::steady_clock::now();
  if (absl::StatusOr<std::vector<std::string>> p = routing.Prepare(); !p.ok()) {
    return std::fprintf(stderr, "%s\n", p.status().ToString().c_str()), 1;
  }
  if (absl::Status s = routing.ApplyAll(subjects); !s.ok()) {
    return std::fprintf(stderr, "%s\n", s.ToString().c_str()), 1;
  }
  const std::chrono::duration<double, std::milli> applied = std::chrono::steady_clock::now() - start;
  absl::StatusOr<std::vector<controlplane::RouteRule>> own = (*kernel)->ListOwn();
  std::printf("applied %zu rules (both families) for %d subjects in %.0f ms\n",
              own.ok() ? own->size() : 0, kSubjects, applied.count());

  std::printf("%-9s %14s %17s %7s   (%d lookups x %d rounds, median)\n", "lookup",
              "no rules (ns)", "1,000 subj. (ns)", "ratio", lookups, rounds);
  for (const Case& c : cases) {
    const auto [without, with_rules] = Measure(*plain, ruled, c, lookups, rounds);
    std::printf("%-9s %14.0f %17.0f %7.2f\n", c.name, without, with_rules, with_rules / without);
  }
  absl::Status released = routing.ReleaseHost();
  if (!released.ok()) std::fprintf(stderr, "%s\n", released.ToString().c_str());
  return 0;
}

}  // namespace
}  // namespace leash

int main(int argc, char** argv) { return leash::Main(argc, argv); }
