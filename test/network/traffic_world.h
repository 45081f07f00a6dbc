// The world the traffic tests run in: a fresh network namespace whose veth pair stands in for
// remote hosts (v0: 192.0.2.10, 2001:db8::10; v1: 192.0.2.11, 2001:db8::11), two test accounts
// (lnft-a-<pid>, lnft-b-<pid>: unique per run, as other runs share the host, and not "leash-"
// names, so a leashd running on the host never discovers them), and lnft_probe copied where
// those accounts can run it (the build tree is under /root, 0700).
// Everything is removed when the world goes, also after a failed assertion.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "test/fixtures/netns.h"
#include "test/fixtures/test_account.h"
#include "test/fixtures/tmpfs.h"

namespace leash::testing {

class TrafficWorld {
 public:
  static absl::StatusOr<std::unique_ptr<TrafficWorld>> Create();

  const NetNamespace& ns() const { return *ns_; }
  const TestAccount& a() const { return *a_; }
  const TestAccount& b() const { return *b_; }

  // Runs `lnft_probe proto address port` inside the namespace as `account` (root when null)
  // and returns its one line ("a 192.0.2.11:443", "error EPERM", "timeout"), or
  // "probe failed: ..." when it could not run — which no expectation matches.
  std::string Probe(const TestAccount* account, const std::string& proto,
                    const std::string& address, uint16_t port) const;
  // lnft_probe's path, where the test accounts can run it.
  const std::string& probe_path() const { return probe_; }

 private:
  TrafficWorld() = default;
  // Declared in creation order, destroyed in reverse.
  std::unique_ptr<NetNamespace> ns_;
  std::unique_ptr<TestAccount> a_;
  std::unique_ptr<TestAccount> b_;
  std::unique_ptr<TmpfsMount> mount_;
  std::string probe_;
};

// Base fixture: a fresh TrafficWorld per test (root required), its two accounts as a_ and b_.
// A derived SetUp calls TrafficTest::SetUp() first and returns if it failed or skipped.
class TrafficTest : public ::testing::Test {
 protected:
  void SetUp() override;
  std::string Probe(const TestAccount* account, const std::string& proto,
                    const std::string& address, uint16_t port) const {
    return world_->Probe(account, proto, address, port);
  }

  std::unique_ptr<TrafficWorld> world_;
  const TestAccount* a_ = nullptr;
  const TestAccount* b_ = nullptr;
};

}  // namespace leash::testing
