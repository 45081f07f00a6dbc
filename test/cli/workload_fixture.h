// The world of the end-to-end tests that run an agent's small workload through Leash (audit,
// suggest, the learning flow): on the watched tmpfs a work tree, a file beside it and three
// programs; on the remote host an HTTP server at two ports; and the scripts the agent runs,
// the workload itself and the three actions beside it.
#pragma once

#include <string>
#include <vector>

#include "test/leashd/agent_fixture.h"

namespace leash::testing {

class WorkloadTest : public AgentTest {
 protected:
  // On the tmpfs /work/{a,b,c}.txt, /work/sub/d.txt, /outside.txt and /bin/tool-{one,two,
  // three}; on 192.0.2.11 ports 8080 and 8081 answering every GET with "hello".
  void MakeWorld();

  // Python for the agent: an HTTP GET of :8080 (printing "http hello"), the work tree read in,
  // tool-one and tool-two run; each must succeed (the script stops at the first that does not),
  // and it prints "workload done" at the end.
  std::string WorkloadScript() const;
  // Python for the agent: reading /outside.txt, running tool-three and connecting to :8081,
  // each printing "<file|exec|port> allowed" or "... refused".
  std::string OutsideScript() const;
  // OutsideScript's three tries alone, for a script that imports subprocess and urllib.request
  // itself.
  std::string TryOutside() const;

  // The `leash` commands a suggestion prints for the operator to run (its "#   sudo leash "
  // lines), without that prefix.
  static std::vector<std::string> PrintedCommands(const std::string& suggestion);
};

}  // namespace leash::testing
