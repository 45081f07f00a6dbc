// Everything an end-to-end run of leash-proxy needs, made for one test and removed after (also
// on failure): a network namespace for this host (the proxy, the agents) and a second one, the
// remote side of a veth pair, standing in for test hosts off this host, test accounts
// as agents, their redirect rules, a hosts file the proxy resolves names from (ip netns exec
// bind-mounts /etc/netns/<ns>/hosts over /etc/hosts for processes it starts), leashd's real
// PolicyStream service on a Unix socket, and the proxy process itself inside the namespace.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/policystream/policy_stream_service.h"
#include "grpcpp/grpcpp.h"
#include "leash/v1/decision.pb.h"
#include "leash/v1/policy_stream.pb.h"
#include "test/fixtures/netns.h"
#include "test/fixtures/subprocess.h"
#include "test/fixtures/temp_dir.h"
#include "test/fixtures/test_account.h"

namespace leash::testing {

struct TestbedOptions {
  // Agent accounts to create (never leash-*: those are discovery's), each with its proxy port.
  std::vector<std::pair<std::string, uint16_t>> agents;
  // Addresses of the veth pair's two ends: v0 in this host's namespace, v1 in the remote one.
  // Test hosts live on documentation ranges (192.0.2.0/24, 198.51.100.0/24, 2001:db8::/32),
  // which the proxy's destination guard treats as public. They sit in their own namespace
  // because the guard refuses a name that leads to an address of the proxy's own host.
  std::vector<std::string> v0_addresses;
  std::vector<std::string> v1_addresses;
  // Lines of /etc/hosts as the proxy sees it.
  std::string hosts_file;
  // Extra proxy flags.
  std::vector<std::string> proxy_flags;
  // Helper programs (runfiles paths) copied where the agent accounts can run them.
  std::vector<std::string> helpers;
  // Per agent (by index; missing: UDP unfiltered, no resolvers): its resolvers and whether its
  // DNS goes through the proxy's filter (network.dns: filter) or straight to them (resolvers).
  // The resolvers also go to the proxy in each SubjectPolicy.
  struct Dns {
    std::vector<std::string> resolvers;
    bool filter = true;
    // network.udp: allow in the agent's chain (and its policy).
    bool udp_allow = false;
  };
  std::vector<Dns> dns;
};

class ProxyTestbed {
 public:
  static absl::StatusOr<std::unique_ptr<ProxyTestbed>> Create(const TestbedOptions& options);
  ~ProxyTestbed();

  // This host: the proxy, the agents, the redirect rules.
  NetNamespace& ns() { return *ns_; }
  // The test hosts on v1 (serve there: Enter() it, or Exec/Run in it).
  NetNamespace& remote() { return *remote_; }
  uint32_t uid(size_t agent) const { return accounts_[agent]->uid(); }
  const TestAccount& account(size_t agent) const { return *accounts_[agent]; }
  // A copied helper's path (by its base name), runnable by every account.
  std::string Helper(const std::string& name) const;

  // Publishes these subjects (leashd's side), then waits until the proxy acked the version.
  absl::StatusOr<uint64_t> PublishAndWait(const std::vector<leash::v1::SubjectPolicy>& subjects);
  policystream::SidecarState ProxyState() const;

  // Starts the proxy (after a first Publish, so its first map is complete).
  absl::Status StartProxy();
  pid_t proxy_pid() const { return proxy_->pid(); }

  // Runs argv as agent `agent` inside the namespace.
  absl::StatusOr<RunResult> RunAs(size_t agent, const std::vector<std::string>& argv,
                                  absl::Duration timeout = absl::Seconds(30)) const;
  // Runs argv as root inside the namespace.
  absl::StatusOr<RunResult> RunAsRoot(const std::vector<std::string>& argv,
                                      absl::Duration timeout = absl::Seconds(30)) const;

  // Every decision record written so far.
  std::vector<leash::v1::DecisionRecord> Records() const;
  const std::string& decision_log_path() const { return decision_log_; }
  const std::string& proxy_stderr_path() const { return proxy_stderr_; }

  // A subject with `policy` given as text-format leash.v1.Config.
  leash::v1::SubjectPolicy Subject(size_t agent, const std::string& config_text) const;
  leash::v1::SubjectPolicy NoPolicySubject(size_t agent, const std::string& reason) const;

 private:
  ProxyTestbed() = default;

  TestbedOptions options_;
  std::vector<std::unique_ptr<TestAccount>> accounts_;
  std::unique_ptr<NetNamespace> ns_;
  std::unique_ptr<NetNamespace> remote_;
  std::string etc_netns_dir_;
  bool created_etc_netns_ = false;
  std::unique_ptr<TempDir> dir_;  // sockets, helpers, the decision log
  std::string decision_log_;
  std::string proxy_stderr_;
  std::unique_ptr<policystream::PolicyStreamService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Background> proxy_;
  std::vector<std::string> helper_paths_;
};

}  // namespace leash::testing
