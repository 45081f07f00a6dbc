// The rules every `leash suggest` entry must keep, checked from outside the code that makes
// them, over a host whose every program and folder is labelled by hand (AdversarialHost):
// - commands: only the host's programs no account but root could change and that are not the
//   ELF loader (under any of its names, links, hard links, or as some program's PT_INTERP);
// - network: only names and addresses exactly as seen, never a wildcard;
// - filesystem: a path exactly as seen, or a folder only root could have filled;
// - everything seen and not suggested is listed, with why, in the notes.
// Used by the property test and the fuzz target.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "cli/suggest_fragment.h"
#include "cli/suggest_observations.h"
#include "cli/testing/fake_path_facts.h"

namespace leash::cli::testing {

inline constexpr uint32_t kAgentUid = 2001;

struct AdversarialHost {
  FakePathFacts facts;
  // Programs that may become command entries.
  std::set<std::string> good_programs;
  // Programs (and other names for them) that must never: loaders, and what the agent (or any
  // account but root) could replace.
  std::vector<std::string> bad_programs;
  // Folders no account but root could have filled: the only folders a collapse may produce.
  std::set<std::string> root_folders;
  // Folders the agent can write, where it names the files.
  std::vector<std::string> agent_folders;
};

// The labelled host (built once).
const AdversarialHost& Host();

// Every rule `fragment` (built from `observations` over Host().facts) breaks, one line each;
// empty when it keeps them all.
std::vector<std::string> BrokenRules(const Fragment& fragment, const Observations& observations);

}  // namespace leash::cli::testing
