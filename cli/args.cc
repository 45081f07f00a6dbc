#include "cli/args.h"

#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/config_defaults.h"
#include "engine/utf8.h"

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

bool IsLocalPath(absl::string_view option) {
  return option == "from" || option == "socket" || option == "tools-socket" ||
         option == "state-dir" || option == "run-dir" || option == "log";
}

}  // namespace

absl::StatusOr<Args> ParseArgs(int argc, const char* const* argv, const char* env_config) {
  // Flags that take a value, besides --config/-c and --ack.
  static const std::set<std::string> kValued = {"from",   "user",         "tail",
                                                "inputs", "account",      "socket",
                                                "tools-socket", "state-dir",  "run-dir",
                                                // suggest
                                                "since", "until", "surface", "log", "profile",
                                                // logs
                                                "action", "ref"};
  Args args;
  args.config_named = env_config != nullptr && *env_config != '\0';
  args.config_path = args.config_named ? env_config : std::string(engine::kDefaultConfigPath);
  bool words_only = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (words_only || arg.empty() || arg[0] != '-' || arg == "-") {
      if (absl::Status utf8 = RequireUtf8("argument", arg); !utf8.ok()) return utf8;
      args.words.push_back(arg);
      continue;
    }
    if (arg == "--") {
      words_only = true;
      continue;
    }
    std::string name = arg;
    std::string value;
    bool has_value = false;
    if (const size_t eq = arg.find('='); eq != std::string::npos && absl::StartsWith(arg, "--")) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    auto take_value = [&]() -> absl::StatusOr<std::string> {
      if (has_value) return value;
      if (i + 1 >= argc) {
        return absl::InvalidArgumentError(absl::StrCat(name, " needs a value"));
      }
      return std::string(argv[++i]);
    };
    if (name == "-c" || name == "--config") {
      absl::StatusOr<std::string> v = take_value();
      if (!v.ok()) return v.status();
      args.config_path = *v;
      args.config_named = true;
    } else if (name == "--ack") {
      absl::StatusOr<std::string> v = take_value();
      if (!v.ok()) return v.status();
      if (absl::Status utf8 = RequireUtf8("--ack", *v); !utf8.ok()) return utf8;
      args.acks.push_back(*v);
    } else if (name == "--json") {
      args.json = true;
    } else if (name == "-h" || name == "--help") {
      args.help = true;
    } else if (name == "--offline") {
      args.offline = true;
    } else if (name == "--no-reconcile") {
      args.no_reconcile = true;
    } else if (name == "--follow" || name == "-f") {
      args.follow = true;
    } else if (name == "--unless-failed") {
      args.unless_failed = true;
    } else if (absl::StartsWith(name, "--") && kValued.count(name.substr(2))) {
      absl::StatusOr<std::string> v = take_value();
      if (!v.ok()) return v.status();
      if (!IsLocalPath(name.substr(2))) {
        if (absl::Status utf8 = RequireUtf8(name, *v); !utf8.ok()) return utf8;
      }
      args.options.emplace_back(name.substr(2), *v);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag '", name, "'; see `leash --help`"));
    }
  }
  return args;
}

}  // namespace leash::cli
