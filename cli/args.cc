#include "cli/args.h"

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/command_line.h"
#include "cli/usage.h"
#include "engine/config_defaults.h"
#include "engine/utf8.h"

// Global and every command's flags. The help is one line each; usage.cc says more.
ABSL_FLAG(std::string, config, std::string(leash::engine::kDefaultConfigPath), "config file");
ABSL_FLAG(bool, json, false, "every outcome as one JSON object on stdout");
ABSL_FLAG(leash::RepeatedFlag, ack, {}, "consent to a loosening: the token its refusal names");
ABSL_FLAG(bool, offline, false, "status, validate, check: from the config file, not leashd");
ABSL_FLAG(bool, no_reconcile, false, "write the policy but do not reconcile");
ABSL_FLAG(bool, follow, false, "logs: then each new decision as it happens");
ABSL_FLAG(bool, unless_failed, false, "teardown: release only after a deliberate stop");
ABSL_FLAG(std::string, from, "", "profile save: the profile's file");
ABSL_FLAG(std::string, user, "", "init: the user to leash");
ABSL_FLAG(std::string, tail, "", "logs: the last N decisions (default 20)");
ABSL_FLAG(std::string, inputs, "", "tool check: the call's inputs as JSON, or - for stdin");
ABSL_FLAG(std::string, account, "",
          "check, tool check, logs, suggest: the agent account it is about");
ABSL_FLAG(std::string, socket, "", "leashd's admin socket (default /run/leash/leash.sock)");
ABSL_FLAG(std::string, tools_socket, "", "the tools socket (default /run/leash/tools.sock)");
ABSL_FLAG(std::string, state_dir, "",
          "teardown, suggest: leashd's state folder (default /var/lib/leash)");
ABSL_FLAG(std::string, run_dir, "", "teardown: leashd's run folder (default /run/leash)");
ABSL_FLAG(std::string, since, "", "logs, suggest: from a duration before now or an RFC 3339 time");
ABSL_FLAG(std::string, until, "", "logs, suggest: up to a duration before now or an RFC 3339 time");
ABSL_FLAG(leash::RepeatedFlag, surface, {}, "logs: the one surface; suggest: a surface to include");
ABSL_FLAG(std::string, log, "",
          "suggest: the decision log (default the floor's logging.decisions)");
ABSL_FLAG(std::string, profile, "", "suggest: the profile's name (default <account>-observed)");
ABSL_FLAG(std::string, action, "", "logs: block or allow");
ABSL_FLAG(std::string, ref, "", "logs: from this decision's ref on");

namespace leash::cli {

std::string Args::Option(const std::string& name, const std::string& fallback) const {
  for (const auto& [key, value] : options) {
    if (key == name) return value;
  }
  return fallback;
}

bool Args::HasOption(const std::string& name) const {
  for (const auto& option : options) {
    if (option.first == name) return true;
  }
  return false;
}

namespace {

// The flags that take a string value, which reach the commands through Args::options.
struct ValuedFlag {
  const char* name;
  const absl::Flag<std::string>* flag;
};
const ValuedFlag kValued[] = {
    {"from", &FLAGS_from},       {"user", &FLAGS_user},
    {"tail", &FLAGS_tail},       {"inputs", &FLAGS_inputs},
    {"account", &FLAGS_account}, {"socket", &FLAGS_socket},
    {"tools_socket", &FLAGS_tools_socket}, {"state_dir", &FLAGS_state_dir},
    {"run_dir", &FLAGS_run_dir}, {"since", &FLAGS_since},
    {"until", &FLAGS_until},     {"log", &FLAGS_log},
    {"profile", &FLAGS_profile}, {"action", &FLAGS_action},
    {"ref", &FLAGS_ref},
};

// Words, --ack and the named values travel to leashd in protobuf strings, which must be UTF-8
// (a request holding anything else fails to parse there, as an empty INTERNAL error). Paths the
// CLI only opens itself (--config, --from, the sockets, --state-dir) may be any bytes.
absl::Status RequireUtf8(absl::string_view what, absl::string_view text) {
  if (engine::IsValidUtf8(text)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      what, " '", engine::EscapeInvalidUtf8(text),
      "' is not UTF-8 text (the bytes shown as \\xNN are not); leash's commands take UTF-8 "
      "only. The watcher still judges files so named, and `leash logs` shows them that way"));
}

bool IsLocalPath(absl::string_view flag) {
  return flag == "config" || flag == "from" || flag == "socket" || flag == "tools_socket" ||
         flag == "state_dir" || flag == "run_dir" || flag == "log";
}

std::string Dashed(absl::string_view flag) { return absl::StrReplaceAll(flag, {{"_", "-"}}); }

CommandLineRules Rules(const char* env_config) {
  CommandLineRules rules;
  rules.program = "leash";
  rules.short_names = {{'c', "config"}, {'f', "follow"}};
  rules.env_defaults = {{"config", "LEASH_CONFIG"}};
  rules.getenv = [env_config](const char* variable) {
    return absl::string_view(variable) == "LEASH_CONFIG" ? env_config : nullptr;
  };
  rules.check_value = [](absl::string_view flag, absl::string_view value) {
    if (flag.empty()) return RequireUtf8("argument", value);
    if (IsLocalPath(flag)) return absl::OkStatus();
    return RequireUtf8(absl::StrCat("--", Dashed(flag)), value);
  };
  return rules;
}

}  // namespace

absl::StatusOr<Args> ParseArgs(int argc, const char* const* argv, const char* env_config) {
  absl::StatusOr<CommandLine> line =
      ParseCommandLine(std::vector<std::string>(argv + 1, argv + argc), Rules(env_config));
  if (!line.ok()) return line.status();
  Args args;
  args.config_path = absl::GetFlag(FLAGS_config);
  args.config_named = line->Given("config");
  args.json = absl::GetFlag(FLAGS_json);
  args.help = line->help;
  args.offline = absl::GetFlag(FLAGS_offline);
  args.no_reconcile = absl::GetFlag(FLAGS_no_reconcile);
  args.acks = absl::GetFlag(FLAGS_ack).values;
  args.words = std::move(line->positional);
  for (const ValuedFlag& valued : kValued) {
    if (line->Given(valued.name)) {
      args.options.emplace_back(Dashed(valued.name), absl::GetFlag(*valued.flag));
    }
  }
  for (const std::string& surface : absl::GetFlag(FLAGS_surface).values) {
    args.options.emplace_back("surface", surface);
  }
  args.follow = absl::GetFlag(FLAGS_follow);
  args.unless_failed = absl::GetFlag(FLAGS_unless_failed);
  return args;
}

std::string HelpText(const std::string& command) {
  const std::string usage = Usage(command);
  return usage == Usage("") ? FlagsHelp(usage, Rules(nullptr)) : usage;
}

}  // namespace leash::cli
