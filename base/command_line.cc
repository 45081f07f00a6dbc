#include "base/command_line.h"

#include <cstdint>
#include <iostream>
#include <map>
#include <optional>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/marshalling.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/time.h"
#include "base/exit_codes.h"

namespace leash::base {
namespace {

std::string Dashed(absl::string_view name) { return absl::StrReplaceAll(name, {{"_", "-"}}); }

// absl's own flags (--flagfile, --fromenv, ...) are not the program's: a program's flags are
// the ones it lists in --help.
bool IsProgramFlag(const absl::CommandLineFlag& flag) {
  return !absl::StrContains(flag.Filename(), "absl/");
}

const absl::CommandLineFlag* FindProgramFlag(absl::string_view name) {
  const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
  return flag != nullptr && IsProgramFlag(*flag) ? flag : nullptr;
}

template <typename T>
std::string ParseError(absl::string_view value, absl::string_view takes) {
  T parsed{};
  std::string error;
  if (absl::ParseFlag<T>(value, &parsed, &error)) return "";
  return absl::StrCat("expected ", takes, error.empty() ? "" : absl::StrCat(" (", error, ")"));
}

// Why `value` does not fit the flag's type ("" when it does), checked here so that
// absl::ParseCommandLine, which exits on a bad value, never sees one.
std::string ValueError(const absl::CommandLineFlag& flag, absl::string_view value) {
  std::string error;
  if (flag.IsOfType<bool>()) error = ParseError<bool>(value, "true or false");
  if (flag.IsOfType<int>()) error = ParseError<int>(value, "a whole number");
  if (flag.IsOfType<int64_t>()) error = ParseError<int64_t>(value, "a whole number");
  if (flag.IsOfType<uint64_t>()) error = ParseError<uint64_t>(value, "a whole number >= 0");
  if (flag.IsOfType<double>()) error = ParseError<double>(value, "a number");
  if (flag.IsOfType<absl::Duration>()) {
    error = ParseError<absl::Duration>(value, "a duration such as 500ms or 10s");
  }
  if (!error.empty()) return error;
  const bool parses = flag.IsOfType<bool>() || flag.IsOfType<int>() ||
                      flag.IsOfType<int64_t>() || flag.IsOfType<uint64_t>() ||
                      flag.IsOfType<double>() || flag.IsOfType<absl::Duration>() ||
                      flag.IsOfType<std::string>();
  return parses ? "" : "a flag of a type this parser does not check";
}

std::map<std::string, const absl::CommandLineFlag*> ProgramFlags() {
  std::map<std::string, const absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (IsProgramFlag(*flag)) flags[std::string(name)] = flag;
  }
  return flags;
}

}  // namespace

absl::StatusOr<CommandLine> ParseCommandLine(const std::vector<std::string>& args) {
  CommandLine out;
  // Every flag at its default first, then the ones given.
  std::vector<std::string> absl_args = {"leash"};
  for (const auto& [name, flag] : ProgramFlags()) {
    absl_args.push_back(absl::StrCat("--", name, "=", flag->DefaultValue()));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      out.positional.insert(out.positional.end(), args.begin() + i + 1, args.end());
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      out.positional.push_back(arg);
      continue;
    }
    absl::string_view body = arg;
    body.remove_prefix(arg[1] == '-' ? 2 : 1);
    const size_t eq = body.find('=');
    const std::string dashed(body.substr(0, eq));
    const std::string name = absl::StrReplaceAll(dashed, {{"-", "_"}});
    if (name == "help" || name == "h") {
      out.help = true;
      continue;
    }
    std::optional<std::string> value;
    if (eq != absl::string_view::npos) value = std::string(body.substr(eq + 1));
    const absl::CommandLineFlag* flag = FindProgramFlag(name);
    bool negated = false;
    if (flag == nullptr && absl::StartsWith(name, "no")) {
      flag = FindProgramFlag(name.substr(2));
      negated = flag != nullptr && flag->IsOfType<bool>();
      if (!negated) flag = nullptr;
    }
    if (flag == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag '", arg, "'"));
    }
    if (flag->IsOfType<bool>()) {
      if (negated && value) {
        return absl::InvalidArgumentError(absl::StrCat("--", dashed, " takes no value"));
      }
      if (!value) value = negated ? "false" : "true";
    } else if (!value) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", dashed, " needs a value: --", dashed, "=..."));
      }
      value = args[++i];
    }
    if (const std::string error = ValueError(*flag, *value); !error.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--", Dashed(flag->Name()), "=", *value,
                                                     ": ", error));
    }
    absl_args.push_back(absl::StrCat("--", flag->Name(), "=", *value));
  }
  // Every name and value was checked above, so this parse cannot fail (and exit).
  std::vector<char*> argv;
  for (std::string& arg : absl_args) argv.push_back(arg.data());
  absl::ParseCommandLine(static_cast<int>(argv.size()), argv.data());
  return out;
}

std::string FlagsHelp(absl::string_view usage) {
  std::string help(usage);
  if (!help.empty() && help.back() != '\n') help += '\n';
  help += "\nflags:\n";
  for (const auto& [name, flag] : ProgramFlags()) {
    const std::string default_value = flag->DefaultValue();
    absl::StrAppend(&help, "  --", Dashed(name), "  ", flag->Help(),
                    default_value.empty() ? "" : absl::StrCat(" (default: ", default_value, ")"),
                    "\n");
  }
  return help;
}

int ParseCommandLineForMain(int argc, char** argv, absl::string_view program,
                            absl::string_view usage, std::vector<std::string>* positional) {
  absl::StatusOr<CommandLine> parsed =
      ParseCommandLine(std::vector<std::string>(argv + 1, argv + argc));
  if (parsed.ok() && parsed->help) {
    std::cout << FlagsHelp(usage);
    return base::kExitOk;
  }
  if (parsed.ok() && positional == nullptr && !parsed->positional.empty()) {
    parsed = absl::InvalidArgumentError(
        absl::StrCat("unexpected argument '", parsed->positional.front(), "'"));
  }
  if (!parsed.ok()) {
    std::cerr << program << ": " << parsed.status().message() << "\n"
              << "`" << program << " --help` lists the flags\n";
    return base::kExitUsage;
  }
  if (positional != nullptr) *positional = std::move(parsed->positional);
  return -1;
}

}  // namespace leash::base
