// The world the traffic tests run in, on the root tests' fixture (test/fixtures/root_fixture.h):
// the test's network namespace with a veth pair standing in for remote hosts (v0: 192.0.2.10,
// 2001:db8::10; v1: 192.0.2.11, 2001:db8::11), two test accounts (lnft-a-<pid>, lnft-b-<pid>:
// unique per run, as other runs share the host, and not "leash-" names, so a leashd running on
// the host never discovers them), and lnft_probe copied onto the test's tmpfs, where those
// accounts can run it (the build tree is under /root, 0700).
// Everything is removed when the test ends, also after a failed assertion.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/fixtures/root_fixture.h"
#include "test/network/tagged_server.h"

namespace leash::testing {

// A derived SetUp calls TrafficTest::SetUp() first and returns unless Ready().
class TrafficTest : public RootTest {
 protected:
  void SetUp() override;

  // Runs `lnft_probe proto address port` inside the namespace as `account` (root when null)
  // and returns its one line ("a 192.0.2.11:443", "error EPERM", "timeout"), or
  // "probe failed: ..." when it could not run — which no expectation matches.
  std::string Probe(const TestAccount* account, const std::string& proto,
                    const std::string& address, uint16_t port) const;
  // lnft_probe's path, where the test accounts can run it.
  const std::string& probe_path() const { return probe_; }
  // Starts server_ on `endpoints`, in the network namespace the calling thread is in (a test
  // enters ns_ first); fails the test when it cannot.
  void StartServer(std::vector<TaggedServer::Endpoint> endpoints);

  const TestAccount* a_ = nullptr;
  const TestAccount* b_ = nullptr;
  std::unique_ptr<TaggedServer> server_;

 private:
  std::string probe_;
};

}  // namespace leash::testing
