// `leash suggest` as the command line gives it: the flags handed to suggest_command.h.
#include "absl/time/clock.h"
#include "cli/commands.h"
#include "cli/suggest_command.h"

namespace leash::cli {

int RunSuggest(const Args& args, Io io) {
  SuggestRequest request;
  request.account = args.Option("account");
  request.since = args.Option("since");
  request.until = args.Option("until");
  for (const auto& [name, value] : args.options) {
    if (name == "surface") request.surfaces.push_back(value);
  }
  request.log_path = args.Option("log");
  request.profile = args.Option("profile");
  request.config_path = args.config_path;
  request.state_dir = args.Option("state-dir", "/var/lib/leash");
  request.now = absl::Now();
  if (args.words.size() != 1) request.account.clear();  // stray words: print the usage
  return RunSuggestRequest(request, io.out, io.err);
}

}  // namespace leash::cli
