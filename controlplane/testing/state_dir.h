// Test helpers for the policy stores: a fresh state folder under TEST_TMPDIR for each test
// (removed afterwards), the host inputs a test floor gives, and small file helpers. Test-only.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controlplane/policy_store.h"

namespace leash::controlplane::testing {

// A new, empty folder under TEST_TMPDIR (or /tmp), removed with everything in it on
// destruction. `state()` is a state folder inside it that does not exist yet.
class TempStateDir {
 public:
  TempStateDir();
  ~TempStateDir();
  TempStateDir(const TempStateDir&) = delete;
  TempStateDir& operator=(const TempStateDir&) = delete;

  const std::string& root() const { return root_; }
  std::string state() const { return root_ + "/leash"; }

 private:
  std::string root_;
};

// Host inputs from a floor written as YAML and the discovered agent accounts.
HostInputs Host(const std::string& floor_yaml, std::vector<std::string> agent_accounts);

// The file's content, or "<absent>" when it does not exist (for before/after comparisons).
std::string Contents(const std::string& path);

// Writes `content` to `path` directly (as an operator or an old version would), creating the
// folder. Fails the test on error.
void WriteRaw(const std::string& path, const std::string& content);

}  // namespace leash::controlplane::testing
