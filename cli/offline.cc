#include "cli/offline.h"

#include <pwd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/policy_file.h"
#include "cli/render.h"
#include "proto/host/command_links.h"
#include "engine/check_subject.h"
#include "engine/compiled_policy.h"
#include "engine/config_yaml.h"
#include "engine/named_lists.h"
#include "engine/validate.h"
#include "leash/v1/control.pb.h"
#include "proto/host/exec_routes.h"
#include "proto/host/list_files.h"

namespace leash::cli {

int ReportFailure(Io io, const absl::Status& status) {
  io.err << "leash: " << status.message() << "\n";
  if (absl::IsUnavailable(status)) return base::kExitUnreachable;
  if (absl::IsInvalidArgument(status)) return base::kExitUsage;
  return base::kExitRefused;
}

namespace {

// The floor file's text and what it parses to.
struct ConfigFile {
  std::string text;
  leash::v1::Config config;
};

absl::StatusOr<ConfigFile> LoadConfigText(const std::string& path) {
  absl::StatusOr<std::string> text = ReadPolicyFile(path);
  if (absl::IsNotFound(text.status())) {
    return absl::NotFoundError(
        absl::StrCat(text.status().message(),
                     "; create it with `leash init --user <name>`, or pass --config <path>"));
  }
  if (!text.ok()) return text.status();
  absl::StatusOr<leash::v1::Config> config =
      engine::ParseConfigYaml(*text, engine::ConfigKind::kFloor, path);
  if (!config.ok()) return config.status();
  return ConfigFile{*std::move(text), *std::move(config)};
}

// Whether the account resolves in the system's account database, as leashd looks it up.
absl::StatusOr<bool> UserExists(absl::string_view name) {
  struct passwd entry;
  struct passwd* found = nullptr;
  std::vector<char> buffer(16384);
  const int error =
      getpwnam_r(std::string(name).c_str(), &entry, buffer.data(), buffer.size(), &found);
  if (error != 0 && error != ENOENT && error != ESRCH) {
    return absl::UnavailableError(absl::StrCat("getpwnam: ", std::strerror(error)));
  }
  return found != nullptr;
}

}  // namespace

absl::StatusOr<leash::v1::Config> LoadConfigFile(const std::string& path) {
  absl::StatusOr<ConfigFile> file = LoadConfigText(path);
  if (!file.ok()) return file.status();
  return std::move(file->config);
}

int ValidateOffline(const Args& args, std::ostream& out, std::ostream& err) {
  absl::StatusOr<ConfigFile> file = LoadConfigText(args.config_path);
  if (!file.ok()) {
    err << "leash validate: " << file.status().message() << "\n";
    return base::kExitRefused;
  }
  const leash::v1::Config& config = file->config;
  // What leashd would refuse to start on, then the floor's own findings: the judgement leashd
  // makes of the same file (engine::ValidateStart, engine::ValidateConfig).
  engine::StartFacts facts;
  facts.user_exists = UserExists;
  std::vector<leash::v1::Finding> findings = engine::ValidateStart(config, args.config_path, facts);
  for (leash::v1::Finding& finding : engine::ValidateConfig(config, "floor")) {
    findings.push_back(std::move(finding));
  }
  engine::LocateFindings(file->text, args.config_path, "floor", findings);
  leash::v1::ValidateResponse response;
  for (leash::v1::Finding& finding : findings) *response.add_findings() = std::move(finding);
  const engine::ListTexts lists =
      host::ReadListFiles({&config}, host::ListFolderFor(args.config_path));
  for (leash::v1::Finding& finding : engine::ValidateLists(config, "floor", lists)) {
    *response.add_findings() = std::move(finding);
  }
  // The host's settings, as leashd would read them.
  for (leash::v1::Finding& finding : host::ExecRouteFindings(host::ReadExecRoutes())) {
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
  return response.failed() ? base::kExitRefused : base::kExitOk;
}

int CheckOffline(const Args& args, std::ostream& out, std::ostream& err) {
  if (args.words.size() != 3) {
    err << "usage: leash check <network|filesystem|commands|tools> <subject>\n"
           "  e.g. leash check network github.com:443\n";
    return base::kExitUsage;
  }
  absl::StatusOr<engine::Surface> surface = engine::ParseSurfaceName(args.words[1]);
  if (!surface.ok()) {
    err << "leash check: " << surface.status().message() << "\n";
    return base::kExitUsage;
  }
  absl::StatusOr<leash::v1::Config> config = LoadConfigFile(args.config_path);
  if (!config.ok()) {
    err << "leash check: " << config.status().message() << "\n";
    return base::kExitRefused;
  }
  // Judged as leashd would: with the named lists it uses expanded, and not at all when one
  // cannot be (the subject would be denied everything).
  absl::StatusOr<leash::v1::Config> expanded = engine::ExpandLists(
      *config,
      host::ReadListFiles({&*config}, host::ListFolderFor(args.config_path)));
  if (!expanded.ok()) {
    err << "leash check: " << expanded.status().message() << "\n";
    return base::kExitRefused;
  }
  // With the links leashd would hand the watcher, so a name entry covers what it covers there.
  const engine::CompiledPolicy policy = engine::CompiledPolicy::Compile(
      *expanded, host::ResolveCommandLinks(*expanded, host::SystemCommandPath()));
  std::string resolved;
  absl::StatusOr<engine::Decision> decision =
      host::DecideCheckSubject(policy, *surface, args.words[2], resolved);
  if (!decision.ok()) {
    err << "leash check: " << decision.status().message() << "\n";
    return base::kExitUsage;
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
  return decision->allowed() ? base::kExitOk : base::kExitRefused;
}

}  // namespace leash::cli
