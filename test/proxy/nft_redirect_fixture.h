// The network surface's redirect rules, installed for a test with the `nft` binary (tests may;
// product code may not) until the libnftnl applier (controlplane/nft_netfilter.h) lands — then
// swap this one file for the real applier. Same shape as the spec's: a dispatcher holding only
// `meta skuid <uid> jump agent_<uid>`, and in agent_<uid> the loopback exemption (except the
// proxy range 18000-18999), then every TCP connection redirected to the UID's port; for ip
// and ip6. The rules live in the test's own network namespace and go with it.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "test/fixtures/netns.h"
#include "test/fixtures/subprocess.h"

namespace leash::testing {

struct RedirectedAgent {
  uint32_t uid = 0;
  uint16_t port = 0;
};

// Installs tables `ip lpx_test` and `ip6 lpx_test` in `ns`; `scratch` is a file path the
// script is written to.
inline absl::Status InstallRedirectRules(const NetNamespace& ns,
                                         const std::vector<RedirectedAgent>& agents,
                                         const std::string& scratch) {
  std::string script;
  for (const char* family : {"ip", "ip6"}) {
    const char* loopback = std::string(family) == "ip" ? "ip daddr 127.0.0.0/8" : "ip6 daddr ::1";
    absl::StrAppend(&script, "table ", family, " lpx_test {\n");
    for (const RedirectedAgent& agent : agents) {
      absl::StrAppend(&script, "  chain agent_", agent.uid, " {\n", "    ", loopback,
                      " tcp dport != 18000-18999 return\n",
                      "    meta l4proto tcp redirect to :", agent.port, "\n  }\n");
    }
    absl::StrAppend(&script,
                    "  chain output {\n    type nat hook output priority -100; policy accept;\n");
    for (const RedirectedAgent& agent : agents) {
      absl::StrAppend(&script, "    meta skuid ", agent.uid, " jump agent_", agent.uid, "\n");
    }
    absl::StrAppend(&script, "  }\n}\n");
  }
  {
    std::ofstream file(scratch);
    file << script;
    if (!file.good()) return absl::InternalError(absl::StrCat("cannot write ", scratch));
  }
  absl::StatusOr<RunResult> run = ns.Run({"nft", "-f", scratch});
  if (!run.ok()) return run.status();
  if (run->exit_code != 0) {
    return absl::InternalError(absl::StrCat("nft -f ", scratch, " failed: ", run->out, "\n", script));
  }
  return absl::OkStatus();
}

}  // namespace leash::testing
