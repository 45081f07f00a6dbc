// A stateful RouteRules: Leash's rules and other owners' priorities in memory, a call log, and
// failure injection, for the unit tests of InboundRouting's planning.
#pragma once

#include <sys/socket.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "controlplane/route_rules.h"

namespace leash::controlplane::testing {

class FakeRouteRules : public RouteRules {
 public:
  absl::StatusOr<std::vector<RouteRule>> ListOwn() override {
    if (!fail_list.ok()) return fail_list;
    return rules;
  }
  absl::StatusOr<std::vector<uint32_t>> OtherPriorities() override { return other_priorities; }
  absl::Status Add(const RouteRule& rule) override {
    if (!fail_add.ok()) return fail_add;
    log.push_back("add " + DescribeRouteRule(rule));
    if (std::find(rules.begin(), rules.end(), rule) == rules.end()) rules.push_back(rule);
    return absl::OkStatus();
  }
  absl::Status Delete(const RouteRule& rule) override {
    log.push_back("delete " + DescribeRouteRule(rule));
    auto it = std::find(rules.begin(), rules.end(), rule);
    if (it != rules.end()) rules.erase(it);
    return absl::OkStatus();
  }
  absl::Status PrepareRefusalDevice() override {
    if (!fail_device.ok()) return fail_device;
    device = true;
    return absl::OkStatus();
  }
  absl::Status DeleteRefusalDevice() override {
    device = false;
    routes.clear();
    return absl::OkStatus();
  }
  absl::Status AddRefusalRoute(int family, uint32_t uid) override {
    if (!device) return absl::NotFoundError("no device");
    log.push_back(absl::StrCat("add route ", family == AF_INET6 ? 6 : 4, " ", uid));
    routes.insert({family, uid});
    return absl::OkStatus();
  }
  absl::Status DeleteRefusalRoute(int family, uint32_t uid) override {
    if (routes.erase({family, uid}) > 0) {
      log.push_back(absl::StrCat("delete route ", family == AF_INET6 ? 6 : 4, " ", uid));
    }
    return absl::OkStatus();
  }
  absl::StatusOr<int> ReadFwmarkAccept() override { return fwmark_accept; }
  absl::Status WriteFwmarkAccept(int value) override {
    fwmark_accept = value;
    return absl::OkStatus();
  }

  std::vector<RouteRule> rules;
  bool device = false;
  std::set<std::pair<int, uint32_t>> routes;  // (family, subject UID)
  absl::Status fail_device;
  std::vector<uint32_t> other_priorities;
  int fwmark_accept = 0;
  std::vector<std::string> log;
  absl::Status fail_list;
  absl::Status fail_add;
};

}  // namespace leash::controlplane::testing
