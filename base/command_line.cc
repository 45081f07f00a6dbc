#include "base/command_line.h"

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/marshalling.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/strings/escaping.h"
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
                      flag.IsOfType<std::string>() || flag.IsOfType<RepeatedFlag>();
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

bool AbslParseFlag(absl::string_view text, RepeatedFlag* flag, std::string* error) {
  flag->values.clear();
  while (!text.empty()) {
    const size_t end = text.find('\n');
    if (end == absl::string_view::npos) {
      *error = "a repeated flag's value is set only by the command-line parser";
      return false;
    }
    std::string value;
    if (!absl::CUnescape(text.substr(0, end), &value, error)) return false;
    flag->values.push_back(std::move(value));
    text.remove_prefix(end + 1);
  }
  return true;
}

std::string AbslUnparseFlag(const RepeatedFlag& flag) {
  std::string text;
  for (const std::string& value : flag.values) absl::StrAppend(&text, absl::CEscape(value), "\n");
  return text;
}

absl::StatusOr<CommandLine> ParseCommandLine(const std::vector<std::string>& args,
                                             const CommandLineRules& rules) {
  CommandLine out;
  // Every flag at its default first, then the ones given.
  std::vector<std::string> absl_args = {"leash"};
  for (const auto& [name, flag] : ProgramFlags()) {
    absl_args.push_back(absl::StrCat("--", name, "=", flag->DefaultValue()));
  }
  // Every occurrence of each RepeatedFlag, set once at the end.
  std::map<std::string, RepeatedFlag> repeated;
  auto check = [&rules](absl::string_view flag, absl::string_view value) {
    return rules.check_value ? rules.check_value(flag, value) : absl::OkStatus();
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      for (size_t j = i + 1; j < args.size(); ++j) {
        if (absl::Status checked = check("", args[j]); !checked.ok()) return checked;
        out.positional.push_back(args[j]);
      }
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      if (absl::Status checked = check("", arg); !checked.ok()) return checked;
      out.positional.push_back(arg);
      continue;
    }
    const bool single_dash = arg[1] != '-';
    absl::string_view body = arg;
    body.remove_prefix(single_dash ? 1 : 2);
    const size_t eq = body.find('=');
    std::string dashed(body.substr(0, eq));
    std::string name = absl::StrReplaceAll(dashed, {{"-", "_"}});
    if (name == "help" || name == "h") {
      out.help = true;
      continue;
    }
    if (single_dash && name.size() == 1) {
      if (auto alias = rules.short_names.find(name[0]); alias != rules.short_names.end()) {
        name = alias->second;
        dashed = Dashed(name);
      }
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
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown flag '", arg, "'",
          rules.program.empty() ? "" : absl::StrCat("; see `", rules.program, " --help`")));
    }
    if (flag->IsOfType<bool>()) {
      if (negated && value) {
        return absl::InvalidArgumentError(absl::StrCat("--", dashed, " takes no value"));
      }
      if (!value) value = negated ? "false" : "true";
    } else {
      if (!value) {
        if (i + 1 >= args.size()) {
          return absl::InvalidArgumentError(
              absl::StrCat("--", dashed, " needs a value: --", dashed, "=..."));
        }
        value = args[++i];
      }
      if (absl::Status checked = check(flag->Name(), *value); !checked.ok()) return checked;
    }
    if (const std::string error = ValueError(*flag, *value); !error.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--", Dashed(flag->Name()), "=", *value,
                                                     ": ", error));
    }
    out.given.insert(std::string(flag->Name()));
    if (flag->IsOfType<RepeatedFlag>()) {
      repeated[std::string(flag->Name())].values.push_back(*value);
    } else {
      absl_args.push_back(absl::StrCat("--", flag->Name(), "=", *value));
    }
  }
  for (const auto& [name, flag] : repeated) {
    absl_args.push_back(absl::StrCat("--", name, "=", AbslUnparseFlag(flag)));
  }
  for (const auto& [name, variable] : rules.env_defaults) {
    const absl::CommandLineFlag* flag = FindProgramFlag(name);
    if (flag == nullptr || out.Given(name)) continue;
    const char* env = rules.getenv ? rules.getenv(variable.c_str()) : std::getenv(variable.c_str());
    if (env == nullptr || *env == '\0') continue;
    if (const std::string error = ValueError(*flag, env); !error.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("$", variable, "=", env, ": ", error));
    }
    out.given.insert(name);
    absl_args.push_back(absl::StrCat(
        "--", name, "=",
        flag->IsOfType<RepeatedFlag>() ? AbslUnparseFlag(RepeatedFlag{{env}}) : env));
  }
  // Every name and value was checked above, so this parse cannot fail (and exit).
  std::vector<char*> argv;
  for (std::string& arg : absl_args) argv.push_back(arg.data());
  absl::ParseCommandLine(static_cast<int>(argv.size()), argv.data());
  return out;
}

std::string FlagsHelp(absl::string_view usage, const CommandLineRules& rules) {
  std::map<std::string, char> letters;
  for (const auto& [letter, name] : rules.short_names) letters[name] = letter;
  std::string help(usage);
  if (!help.empty() && help.back() != '\n') help += '\n';
  help += "\nflags:\n";
  for (const auto& [name, flag] : ProgramFlags()) {
    std::string default_value = flag->DefaultValue();
    if (auto env = rules.env_defaults.find(name); env != rules.env_defaults.end()) {
      default_value = absl::StrCat("$", env->second,
                                   default_value.empty() ? "" : ", else " + default_value);
    }
    const auto letter = letters.find(name);
    const std::string short_name =
        letter == letters.end() ? "" : absl::StrCat("-", std::string(1, letter->second), ", ");
    absl::StrAppend(&help, "  ", short_name, "--", Dashed(name), "  ", flag->Help(),
                    flag->IsOfType<RepeatedFlag>() ? " (repeatable)" : "",
                    default_value.empty() ? "" : absl::StrCat(" (default: ", default_value, ")"),
                    "\n");
  }
  return help;
}

int ParseCommandLineForMain(int argc, char** argv, absl::string_view program,
                            absl::string_view usage, std::vector<std::string>* positional,
                            const CommandLineRules& rules) {
  absl::StatusOr<CommandLine> parsed =
      ParseCommandLine(std::vector<std::string>(argv + 1, argv + argc), rules);
  if (parsed.ok() && parsed->help) {
    std::cout << FlagsHelp(usage, rules);
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
