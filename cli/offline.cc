#include "cli/offline.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/render.h"
#include "proto/host/command_links.h"
#include "proto/host/exec_routes.h"
#include "engine/check_subject.h"
#include "engine/compiled_policy.h"
#include "engine/config_yaml.h"
#include "proto/host/list_files.h"
#include "engine/named_lists.h"
#include "engine/validate.h"
#include "leash/v1/control.pb.h"

namespace leash::cli {

int ReportFailure(Io io, const absl::Status& status) {
  io.err << "leash: " << status.message() << "\n";
  if (absl::IsUnavailable(status)) return kExitUnreachable;
  if (absl::IsInvalidArgument(status)) return kExitUsage;
  return kExitRefused;
}

absl::StatusOr<leash::v1::Config> LoadConfigFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    const int error = errno;
    return absl::NotFoundError(absl::StrCat(
        "cannot read ", path, ": ", std::strerror(error),
        "; create it with `leash init --user <name>`, or pass --config <path>"));
  }
  std::stringstream text;
  text << file.rdbuf();
  return engine::ParseConfigYaml(text.str(), engine::ConfigKind::kFloor, path);
}

int ValidateOffline(const Args& args, std::ostream& out, std::ostream& err) {
  absl::StatusOr<leash::v1::Config> config = LoadConfigFile(args.config_path);
  if (!config.ok()) {
    err << "leash validate: " << config.status().message() << "\n";
    return kExitRefused;
  }
  leash::v1::ValidateResponse response;
  for (leash::v1::Finding& finding : engine::ValidateConfig(*config, "floor")) {
    *response.add_findings() = std::move(finding);
  }
  const engine::ListTexts lists =
      controlplane::ReadListFiles({&*config}, controlplane::ListFolderFor(args.config_path));
  for (leash::v1::Finding& finding : engine::ValidateLists(*config, "floor", lists)) {
    *response.add_findings() = std::move(finding);
  }
  // The host's settings, as leashd would read them.
  for (leash::v1::Finding& finding : controlplane::ExecRouteFindings(controlplane::ReadExecRoutes())) {
    *response.add_findings() = std::move(finding);
  }
  response.set_failed(engine::HasBlockingFinding(
      {response.findings().begin(), response.findings().end()}));
  response.set_evaluated_by("offline");
  response.set_config_path(args.config_path);
  if (args.json) {
    out << ToJson(response) << "\n";
  } else {
    out << RenderValidate(response, args.config_path);
  }
  return response.failed() ? kExitRefused : kExitOk;
}

int CheckOffline(const Args& args, std::ostream& out, std::ostream& err) {
  if (args.words.size() != 3) {
    err << "usage: leash check <network|filesystem|commands|tools> <subject>\n"
           "  e.g. leash check network github.com:443\n";
    return kExitUsage;
  }
  absl::StatusOr<engine::Surface> surface = engine::ParseSurfaceName(args.words[1]);
  if (!surface.ok()) {
    err << "leash check: " << surface.status().message() << "\n";
    return kExitUsage;
  }
  absl::StatusOr<leash::v1::Config> config = LoadConfigFile(args.config_path);
  if (!config.ok()) {
    err << "leash check: " << config.status().message() << "\n";
    return kExitRefused;
  }
  // Judged as leashd would: with the named lists it uses expanded, and not at all when one
  // cannot be (the subject would be denied everything).
  absl::StatusOr<leash::v1::Config> expanded = engine::ExpandLists(
      *config,
      controlplane::ReadListFiles({&*config}, controlplane::ListFolderFor(args.config_path)));
  if (!expanded.ok()) {
    err << "leash check: " << expanded.status().message() << "\n";
    return kExitRefused;
  }
  // With the links leashd would hand the watcher, so a name entry covers what it covers there.
  const engine::CompiledPolicy policy = engine::CompiledPolicy::Compile(
      *expanded, controlplane::ResolveCommandLinks(*expanded, controlplane::SystemCommandPath()));
  std::string resolved;
  absl::StatusOr<engine::Decision> decision =
      controlplane::DecideCheckSubject(policy, *surface, args.words[2], resolved);
  if (!decision.ok()) {
    err << "leash check: " << decision.status().message() << "\n";
    return kExitUsage;
  }
  leash::v1::CheckResponse response;
  *response.mutable_decision() = decision->ToProto();
  response.set_account(config->user());
  response.set_evaluated_by("offline");
  response.set_resolved(resolved);
  if (args.json) {
    out << ToJson(response) << "\n";
  } else {
    out << RenderCheck(response, args.config_path);
  }
  return decision->allowed() ? kExitOk : kExitRefused;
}

}  // namespace leash::cli
