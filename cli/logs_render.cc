#include "cli/logs_render.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "cli/suggest_command.h"
#include "cli/suggest_fragment.h"
#include "engine/decision.h"
#include "engine/decision_record.h"

namespace leash::cli {
namespace {

absl::Status BadFlag(absl::string_view flag, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", why));
}

std::string What(const leash::v1::DecisionRecord& record) {
  const leash::v1::Subject& s = record.subject();
  if (record.surface() == "network") {
    std::string host = !s.domain().empty() ? s.domain() : s.ip();
    if (host.find(':') != std::string::npos && s.port() != 0) host = absl::StrCat("[", host, "]");
    return s.port() != 0 ? absl::StrCat(host, ":", s.port()) : host;
  }
  if (record.surface() == "filesystem") return s.path();
  if (record.surface() == "commands") return s.binary();
  if (record.surface() == "tools") return s.name();
  return "";
}

// The log's ts without its fraction, and a space for the T: read by a person.
std::string ShortTime(absl::string_view ts) {
  std::string out(ts.substr(0, 19));
  if (out.size() == 19 && out[10] == 'T') out[10] = ' ';
  return out;
}

}  // namespace

absl::StatusOr<leash::v1::WatchDecisionsRequest> LogsRequest(const Args& args, absl::Time now) {
  leash::v1::WatchDecisionsRequest request;
  request.set_follow(args.follow);
  request.set_account(args.Option("account"));
  if (args.HasOption("surface")) {
    absl::StatusOr<engine::Surface> surface = engine::ParseSurfaceName(args.Option("surface"));
    if (!surface.ok()) {
      return BadFlag("surface", "takes network|net, filesystem|fs, commands|cmd, tools|tool");
    }
    request.set_surface(std::string(engine::SurfaceName(*surface)));
  }
  if (args.HasOption("action")) {
    const std::string action = args.Option("action");
    if (action != "allow" && action != "block") return BadFlag("action", "takes block or allow");
    request.set_action(action);
  }
  for (const char* flag : {"since", "until"}) {
    if (!args.HasOption(flag)) continue;
    absl::StatusOr<absl::Time> when = ParseSuggestTime(args.Option(flag), now);
    if (!when.ok()) return BadFlag(flag, when.status().message());
    const std::string text = absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", *when, absl::UTCTimeZone());
    if (std::string(flag) == "since") {
      request.set_since(text);
    } else {
      request.set_until(text);
    }
  }
  request.set_ref(args.Option("ref"));
  if (request.ref().empty() && request.since().empty()) {
    int tail = 20;
    if (args.HasOption("tail") && (!absl::SimpleAtoi(args.Option("tail"), &tail) || tail < 0)) {
      return BadFlag("tail", "takes a number of lines");
    }
    request.set_tail(static_cast<uint32_t>(tail));
  }
  return request;
}

std::string HumanLine(const leash::v1::WatchDecisionsEvent& event) {
  if (event.line().empty()) return CommentText(absl::StrCat("-- ", event.notice()));
  const leash::v1::DecisionRecord& record = event.record();
  std::string account = event.account();
  if (account.empty()) {
    account = record.uid() == engine::kUnknownUid ? "-" : absl::StrCat("uid ", record.uid());
  }
  std::string action = record.action();
  if (action == "block" && record.has_enforced() && !record.enforced()) {
    action = "block (audit)";
  }
  if (action == "block") action = "BLOCK";
  std::string what = What(record);
  if (what.empty()) what = "-";
  // One line per decision, and only text: a file name, a Host header or a tool's name is the
  // agent's to write, and a newline or carriage return in it would print a line of its own
  // choosing (a forged decision) and an escape sequence would drive the operator's terminal.
  // Every control character is shown as \xNN instead (a reason's newline as a space).
  const std::string reason = absl::StrReplaceAll(record.reason(), {{"\n", " "}});
  return CommentText(absl::StrCat(ShortTime(record.ts()), "  ", account, "  ",
                                  record.surface().empty() ? "-" : record.surface(), "  ", action,
                                  "  ", what, "  ", reason, "  ref=", record.ref()));
}

}  // namespace leash::cli
