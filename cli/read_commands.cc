// status, validate and check: answered by leashd when it is running (the live, resolved policy
// of every subject), and from the config file when it is not — saying which.
#include <pwd.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/config_target.h"
#include "cli/offline.h"
#include "cli/render.h"
#include "engine/config_defaults.h"
#include "engine/decision.h"

namespace leash::cli {
namespace {

// The leashed user's UID from the account database, when it resolves.
std::optional<uint32_t> UidOf(const std::string& user) {
  if (user.empty()) return std::nullopt;
  struct passwd entry;
  struct passwd* found = nullptr;
  char buffer[4096];
  if (getpwnam_r(user.c_str(), &entry, buffer, sizeof(buffer), &found) != 0 || found == nullptr) {
    return std::nullopt;
  }
  return found->pw_uid;
}

// What is not as it should be in a running leashd's answer, one line each.
std::vector<std::string> Degraded(const leash::v1::StatusResponse& response) {
  std::vector<std::string> out;
  for (const leash::v1::SubjectStatus& subject : response.subjects()) {
    if (subject.state() == "enforced") continue;
    out.push_back(absl::StrCat(subject.account(), " is ", subject.state(),
                               subject.detail().empty() ? "" : absl::StrCat(" (", subject.detail(), ")")));
  }
  for (const std::string& line : response.last_reconcile().not_in_force()) {
    out.push_back(absl::StrCat("not in force: ", line));
  }
  for (const leash::v1::SidecarStatus& sidecar : response.sidecars()) {
    if (!sidecar.running()) out.push_back(absl::StrCat(sidecar.name(), " is down"));
  }
  return out;
}

// Why to answer from the file rather than from leashd: --offline, leashd is not there, or the
// operator named a file leashd does not run on (then also said on stderr, since the answer is
// about that file). nullopt: ask leashd.
std::optional<std::string> WhyOffline(const Args& args, Client& client, Io io) {
  if (args.offline) return std::string("--offline");
  if (!client.Reachable()) {
    return absl::StrCat("leashd is not answering on ", client.admin_socket());
  }
  std::optional<std::string> leashd = LeashdRunsOnAnotherConfig(args, client);
  if (!leashd) return std::nullopt;
  io.err << "note: --config names " << args.config_path << ", not " << *leashd
         << " that leashd runs on: judging " << args.config_path
         << " directly (leave out --config for the live policy)\n";
  return absl::StrCat("leashd runs on ", *leashd, ", not on ", args.config_path);
}

}  // namespace

int RunStatus(const Args& args, Io io) {
  Client client(args.Option("socket", kDefaultAdminSocket));
  if (std::optional<std::string> why = WhyOffline(args, client, io)) {
    absl::StatusOr<leash::v1::Config> config = LoadConfigFile(args.config_path);
    if (!config.ok()) return ReportFailure(io, config.status());
    leash::v1::StatusResponse response;
    response.set_user(config->user());
    if (std::optional<uint32_t> uid = UidOf(config->user())) response.set_uid(*uid);
    response.set_config_path(args.config_path);
    *response.mutable_floor() = engine::WithDefaults(*config);
    response.set_offline(true);
    response.set_offline_reason(*why);
    if (args.json) {
      io.out << ToJson(response) << "\n";
    } else {
      io.out << RenderStatus(response)
             << "(offline: " << *why
             << "; this is the config file, and nothing is known about what is enforced)\n";
    }
    return base::kExitUnreachable;
  }
  leash::v1::StatusResponse response;
  grpc::Status status = client.control().GetStatus(client.Context().get(), {}, &response);
  if (!status.ok()) return ReportFailure(io, client.Explain(status));
  for (std::string& problem : Degraded(response)) response.add_degraded(std::move(problem));
  io.out << (args.json ? ToJson(response) + "\n" : RenderStatus(response));
  if (!args.json && response.degraded_size() > 0) {
    io.out << "DEGRADED: " << absl::StrJoin(response.degraded(), "; ") << "\n";
  }
  // A floor that does not load is a fault to fix, not a state to report as fine.
  if (!response.floor_error().empty()) return base::kExitRefused;
  return response.degraded_size() > 0 ? base::kExitDegraded : base::kExitOk;
}

int RunValidate(const Args& args, Io io) {
  Client client(args.Option("socket", kDefaultAdminSocket));
  if (WhyOffline(args, client, io)) return ValidateOffline(args, io.out, io.err);
  leash::v1::ValidateResponse response;
  grpc::Status status = client.control().Validate(client.Context().get(), {}, &response);
  if (!status.ok()) return ReportFailure(io, client.Explain(status));
  // The file leashd judged: its own, which need not be the default path.
  io.out << (args.json ? ToJson(response) + "\n"
                       : RenderValidate(response, response.config_path().empty()
                                                      ? args.config_path
                                                      : response.config_path()));
  return response.failed() ? base::kExitRefused : base::kExitOk;
}

int RunCheck(const Args& args, Io io) {
  if (args.words.size() != 3) {
    io.err << "usage: leash check <network|filesystem|commands|tools> <subject> "
              "[--account <account>]\n  e.g. leash check network github.com:443\n";
    return base::kExitUsage;
  }
  Client client(args.Option("socket", kDefaultAdminSocket));
  if (WhyOffline(args, client, io)) {
    if (args.HasOption("account")) {
      io.err << "leash check: --account needs leashd (each agent's policy is resolved there); "
                "offline, only the floor's user can be checked\n";
      return base::kExitUnreachable;
    }
    return CheckOffline(args, io.out, io.err);
  }
  absl::StatusOr<engine::Surface> surface = engine::ParseSurfaceName(args.words[1]);
  if (!surface.ok()) return ReportFailure(io, surface.status());
  leash::v1::CheckRequest request;
  request.set_surface(*surface);
  request.set_subject(args.words[2]);
  request.set_account(args.Option("account"));
  leash::v1::CheckResponse response;
  grpc::Status status = client.control().Check(client.Context().get(), request, &response);
  if (!status.ok()) return ReportFailure(io, client.Explain(status));
  io.out << (args.json ? ToJson(response) + "\n" : RenderCheck(response, args.config_path));
  return response.decision().action() == leash::v1::ACTION_ALLOW ? base::kExitOk : base::kExitRefused;
}

}  // namespace leash::cli
