#include "cli/suggest_command.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/suggest_consent.h"
#include "cli/suggest_fragment.h"
#include "cli/suggest_inputs.h"
#include "cli/suggest_observations.h"
#include "cli/suggest_path_facts_linux.h"
#include "engine/config_defaults.h"
#include "engine/decision.h"

namespace leash::cli {
namespace {

constexpr int kOk = 0;
constexpr int kFailed = 1;
constexpr int kUsage = 2;

int Fail(std::ostream& err, const absl::Status& status) {
  err << "leash suggest: " << status.message() << "\n";
  return absl::IsInvalidArgument(status) ? kUsage : kFailed;
}

}  // namespace

absl::StatusOr<absl::Time> ParseSuggestTime(absl::string_view text, absl::Time now) {
  absl::Duration ago;
  if (absl::ParseDuration(std::string(text), &ago) && ago >= absl::ZeroDuration()) {
    return now - ago;
  }
  absl::Time time;
  std::string error;
  if (absl::ParseTime(absl::RFC3339_full, std::string(text), &time, &error)) return time;
  return absl::InvalidArgumentError(absl::StrCat(
      "'", text, "' is neither a duration before now (2h, 90m, 1h30m) nor an RFC 3339 time "
      "(2026-12-02T06:00:00Z)"));
}

int RunSuggestRequest(const SuggestRequest& request, std::ostream& out, std::ostream& err) {
  if (request.account.empty()) {
    err << "usage: leash suggest --account <account> [--since 2h] [--until <when>] "
           "[--surface network|filesystem|commands|tools]... [--log <path>] "
           "[--profile <name>]\n";
    return kUsage;
  }
  ObservationFilter filter;
  for (const std::string& list : request.surfaces) {
    for (absl::string_view name : absl::StrSplit(list, ',', absl::SkipEmpty())) {
      // "files" as well as the CLI's own names: how an operator says it.
      absl::StatusOr<leash::v1::Surface> surface =
          engine::ParseSurfaceName(name == "files" ? "filesystem" : name);
      if (!surface.ok()) return Fail(err, surface.status());
      filter.surfaces.insert(*surface);
    }
  }
  if (!request.since.empty()) {
    absl::StatusOr<absl::Time> since = ParseSuggestTime(request.since, request.now);
    if (!since.ok()) return Fail(err, since.status());
    filter.since = *since;
  }
  if (!request.until.empty()) {
    absl::StatusOr<absl::Time> until = ParseSuggestTime(request.until, request.now);
    if (!until.ok()) return Fail(err, until.status());
    filter.until = *until;
  }
  absl::StatusOr<std::vector<engine::UidRange>> uids =
      AccountUids(request.account, request.subuid_path);
  if (!uids.ok()) return Fail(err, uids.status());
  filter.uids = *uids;

  const absl::StatusOr<HostPolicy> host = ReadHostPolicy(request.config_path, request.state_dir);
  const std::set<leash::v1::Surface> audited_beneath =
      host.ok() ? AuditedBeneath(*host) : std::set<leash::v1::Surface>{};
  const std::string log_path = request.log_path.empty()
                                   ? (host.ok() ? engine::DecisionLogFile(host->floor)
                                                : std::string(engine::kDefaultDecisionLog))
                                   : request.log_path;
  Observations observations(filter);
  absl::StatusOr<std::vector<std::string>> read =
      ReadDecisionLog(log_path, filter.since,
                      [&](absl::string_view line) { observations.AddLine(line); });
  if (!read.ok()) return Fail(err, read.status());

  const std::string profile =
      request.profile.empty() ? absl::StrCat(request.account, "-observed") : request.profile;
  absl::StatusOr<Fragment> fragment = BuildFragment(
      observations, LinuxPathFacts(), filter.surfaces, absl::StrCat("profile:", profile),
      audited_beneath);
  if (!fragment.ok()) return Fail(err, fragment.status());

  const ObservationCounts& counts = observations.counts();
  out << "# leash suggest: a profile fragment for " << request.account << " (uid "
      << engine::FormatUidRanges(filter.uids) << ") from " << counts.subject_lines << " of its "
      << "decisions";
  if (counts.audited > 0) {
    out << " (" << counts.audited << (counts.audited == 1 ? " would-be block" : " would-be blocks")
        << " under audit)";
  }
  out << " in " << absl::StrJoin(*read, ", ") << " (" << counts.lines << " lines)";
  if (!request.since.empty()) out << ", since " << request.since;
  if (!request.until.empty()) out << ", until " << request.until;
  out << ".\n# It allows what the agent was allowed, and what audit logged it would have been "
         "refused;\n# nothing more, beyond the collapses each entry's comment names. Every "
         "entry passed the\n# profile entry check. Surfaces it leaves out keep the floor's "
         "policy.\n";
  out << fragment->yaml;
  for (const std::string& note : fragment->notes) out << "# " << CommentText(note) << "\n";
  if (counts.suppressed_allows > 0) {
    out << "# WARNING: the log's writers held back " << counts.suppressed_allows
        << " allow lines of this agent (their rate limit), so it may have done more than\n"
           "# this shows; the held-back actions would be blocked under this profile\n";
  }
  if (counts.unreadable > 0) {
    out << "# " << counts.unreadable << " lines were not decision records and were skipped\n";
  }
  if (fragment->entries == 0) {
    err << "leash suggest: nothing that " << request.account
        << " was allowed was found in the log" << (request.since.empty() && request.until.empty() ? "" : " in that window")
        << "; nothing to suggest (is logging.level info? allow lines are not written at "
           "warning)\n";
    return kFailed;
  }

  if (!host.ok()) {
    out << "# the save and bind lines cannot be given: " << CommentText(host.status().message())
        << "\n";
    err << "leash suggest: cannot judge the consent the change needs: " << host.status().message()
        << "\n";
    return kFailed;
  }
  const std::string from = absl::StrCat(profile, ".yaml");
  const ConsentLines lines =
      SaveAndBindLines(*host, request.account, profile, fragment->config, from);
  if (!lines.commands.empty()) {
    out << "# To put it in force, save this output as " << from << " and run:\n";
  }
  for (const std::string& command : lines.commands) {
    out << "#   " << CommentText(command) << "\n";
  }
  for (const std::string& note : lines.notes) out << "# " << CommentText(note) << "\n";
  return kOk;
}

}  // namespace leash::cli
