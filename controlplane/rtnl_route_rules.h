// RouteRules for real: a NETLINK_ROUTE socket (libmnl) that dumps, adds and deletes
// policy-routing rules (RTM_GETRULE / RTM_NEWRULE / RTM_DELRULE), makes the refusal device
// (RTM_NEWLINK) and its routes (RTM_NEWROUTE / RTM_DELROUTE), and the tcp_fwmark_accept sysctl
// under /proc/sys. Both belong to the network namespace of the thread that opened them.
// Tested as root in network namespaces (test/network/inbound_traffic_test.cc,
// test/network/rtnl_route_rules_test.cc).
#pragma once

#include <linux/netlink.h>

#include <memory>
#include <string>

#include "controlplane/route_rules.h"

struct mnl_socket;

namespace leash::controlplane {

class RtnlRouteRules : public RouteRules {
 public:
  // Opens the socket and /proc/sys/net/ipv4/tcp_fwmark_accept in the calling thread's network
  // namespace. PermissionDenied without CAP_NET_ADMIN shows on first use.
  static absl::StatusOr<std::unique_ptr<RtnlRouteRules>> Open();
  ~RtnlRouteRules() override;
  RtnlRouteRules(const RtnlRouteRules&) = delete;
  RtnlRouteRules& operator=(const RtnlRouteRules&) = delete;

  absl::StatusOr<std::vector<RouteRule>> ListOwn() override;
  absl::StatusOr<std::vector<uint32_t>> OtherPriorities() override;
  absl::Status Add(const RouteRule& rule) override;
  absl::Status Delete(const RouteRule& rule) override;
  absl::Status PrepareRefusalDevice() override;
  absl::Status DeleteRefusalDevice() override;
  absl::Status AddRefusalRoute(int family, uint32_t uid) override;
  absl::Status DeleteRefusalRoute(int family, uint32_t uid) override;
  absl::StatusOr<int> ReadFwmarkAccept() override;
  absl::Status WriteFwmarkAccept(int value) override;

 private:
  RtnlRouteRules(mnl_socket* socket, int sysctl_fd);
  // Every rule of both families, Leash's and others'.
  absl::StatusOr<std::vector<RouteRule>> ListAll();
  // Sends one request and reads its answer to the end (a dump's NLMSG_DONE, or the ack).
  absl::Status Exchange(const void* request, size_t length, std::vector<RouteRule>* dumped);
  // The same with `callback` run over each message of the answer.
  absl::Status Run(const nlmsghdr* request, int (*callback)(const nlmsghdr*, void*), void* data);
  struct Link {
    int index = 0;
    std::string kind;
  };
  // kRefusalDevice's index and kind; NotFound when there is none.
  absl::StatusOr<Link> FindRefusalDevice();
  // RTM_NEWROUTE / RTM_DELROUTE of `uid`'s refusal route.
  absl::Status ChangeRefusalRoute(uint16_t type, uint16_t flags, int family, uint32_t uid);

  mnl_socket* const socket_;
  const int sysctl_fd_;
  uint32_t seq_ = 1;
  int device_index_ = 0;  // kRefusalDevice's, once PrepareRefusalDevice found or made it
};

}  // namespace leash::controlplane
