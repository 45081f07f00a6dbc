// Every `leash` command: one function each, taking the parsed arguments and the output
// streams, returning the exit code (see offline.h for the codes).
#pragma once

#include <ostream>

#include "absl/status/status.h"
#include "cli/args.h"

namespace leash::cli {

struct Io {
  std::ostream& out;
  std::ostream& err;
};

// Prints "leash: <message>" and returns the exit code its kind means: 3 when leashd is not
// answering, 2 for a usage error, 1 otherwise.
int ReportFailure(Io io, const absl::Status& status);

// Talk to leashd (fall back to the config file for status/validate/check when it is away).
int RunStatus(const Args& args, Io io);
int RunValidate(const Args& args, Io io);
int RunCheck(const Args& args, Io io);
int RunReconcile(const Args& args, Io io);

// Policy writes, through leashd, each followed by its reconcile.
int RunListEdit(const Args& args, Io io);  // <surface> allow|deny <entry> | <surface> mode <m>
int RunEntries(const Args& args, Io io);   // <surface> list | <surface> remove <entry>
int RunProfile(const Args& args, Io io);   // profile save|list|show|delete
int RunBind(const Args& args, Io io);
int RunUnbind(const Args& args, Io io);
int RunBindings(const Args& args, Io io);

// The tools surface, as a harness sees it.
int RunToolCheck(const Args& args, Io io);  // tool check <name> --inputs '<json>'

// Local to the host.
int RunInit(const Args& args, Io io);
int RunLogs(const Args& args, Io io);
int RunRestart(const Args& args, Io io);
int RunTeardown(const Args& args, Io io);
// A profile fragment from what an agent did (suggest_main.cc); prints, writes nothing.
int RunSuggest(const Args& args, Io io);
// `leash` with no command: runs the service (execs leashd).
int RunService(const Args& args, Io io);

}  // namespace leash::cli
