// The policy writes: each goes through leashd (it owns the files), is judged there, and is
// followed by a reconcile unless --no-reconcile. A write that landed but whose reconcile failed,
// or could not put all of it in force (ReconcileReport.not_in_force), is the one state that
// must not exit 0: the policy is on disk and not in force.
#include <unistd.h>

#include <cstdlib>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/caller_claim.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/config_target.h"
#include "cli/offline.h"
#include "cli/policy_file.h"
#include "cli/render.h"
#include "engine/config_yaml.h"
#include "engine/decision.h"
#include "engine/refusal.h"

namespace leash::cli {
namespace {

int Usage(Io io, absl::string_view usage) {
  io.err << "usage: " << usage << "\n";
  return base::kExitUsage;
}

// Prints what a write did and returns its exit code.
int ReportWrite(const leash::v1::PolicyWriteResponse& response, const Args& args, Io io) {
  if (args.json) {
    io.out << ToJson(response) << "\n";
    // The envelope's "error" (base/json_outcome.h); the refusal itself is in the object.
    if (response.has_refusal()) {
      io.err << "refused (" << response.refusal().kind() << "): " << response.refusal().message()
             << "\n";
    }
  } else if (response.has_refusal()) {
    io.out << engine::RenderRefusal(response.refusal());
  } else {
    io.out << (response.written() ? "written" : "unchanged (already so)") << "\n";
  }
  if (!args.json) {
    for (const std::string& notice : response.notices()) io.out << "note: " << notice << "\n";
  }
  if (response.has_refusal()) return base::kExitRefused;
  if (!response.written()) return base::kExitOk;
  if (args.no_reconcile) {
    if (!args.json) {
      io.out << "not reconciled (--no-reconcile): the change is on disk and takes effect at "
                "the next reconcile; run `sudo leash reconcile` to put it in force now\n";
    }
    return base::kExitOk;
  }
  const leash::v1::ReconcileReport& report = response.reconcile();
  if (!report.error().empty() || !report.ran()) {
    io.err << "leash: the policy is on disk and is NOT in force: the reconcile failed: "
           << (report.error().empty() ? "it did not run" : report.error())
           << "\nfix the cause, then run by hand: sudo leash reconcile\n";
    return base::kExitRefused;
  }
  if (!args.json) io.out << RenderReconcile(report);
  if (report.not_in_force_size() > 0) {
    io.err << "leash: the policy is on disk and is NOT in force:\n"
           << RenderNotInForce(report)
           << "fix the cause, then run by hand: sudo leash reconcile\n";
    return base::kExitRefused;
  }
  return base::kExitOk;
}

}  // namespace

constexpr char kListEditUsage[] =
    "leash <surface> allow|deny <entry> [--ack '<field>:<value>']...  |  leash <surface> mode "
    "whitelist|blacklist [--ack '<field>:<value>']...";

int RunListEdit(const Args& args, Io io) {
  // <surface> allow|deny <entry>   or   <surface> mode whitelist|blacklist
  if (args.words.size() != 3) {
    return Usage(io, kListEditUsage);
  }
  absl::StatusOr<engine::Surface> surface = engine::ParseSurfaceName(args.words[0]);
  if (!surface.ok()) return ReportFailure(io, surface.status());
  Client client(args.Option("socket", kDefaultAdminSocket));
  if (std::optional<int> refused = RefuseWriteToAnotherConfig(args, client, io)) return *refused;
  leash::v1::PolicyWriteResponse response;
  grpc::Status status;
  const std::string& verb = args.words[1];
  if (verb == "mode") {
    absl::StatusOr<leash::v1::Mode> mode = engine::ParseModeName(args.words[2]);
    if (!mode.ok()) return ReportFailure(io, absl::InvalidArgumentError(mode.status().message()));
    leash::v1::SetModeRequest request;
    request.set_surface(*surface);
    request.set_mode(*mode);
    for (const std::string& ack : args.acks) request.add_acks(ack);
    request.set_who(DescribeCaller(ReadCallerFacts()));
    request.set_no_reconcile(args.no_reconcile);
    status = client.control().SetMode(client.Context(true).get(), request, &response);
  } else if (verb == "allow" || verb == "deny") {
    leash::v1::AddEntryRequest request;
    request.set_surface(*surface);
    request.set_list(verb == "allow" ? leash::v1::LIST_KIND_ALLOW : leash::v1::LIST_KIND_DENY);
    request.set_entry(args.words[2]);
    for (const std::string& ack : args.acks) request.add_acks(ack);
    request.set_who(DescribeCaller(ReadCallerFacts()));
    request.set_no_reconcile(args.no_reconcile);
    status = client.control().AddEntry(client.Context(true).get(), request, &response);
  } else {
    return Usage(io, kListEditUsage);
  }
  if (!status.ok()) return ReportFailure(io, client.Explain(status));
  return ReportWrite(response, args, io);
}

int RunProfile(const Args& args, Io io) {
  constexpr char kUsage[] =
      "leash profile save <name> --from <file.yaml> [--ack 'agent:<account>=<field>:<value>']... "
      "| list | show <name> | delete <name> [--ack 'dangling:<scope>']...";
  if (args.words.size() < 2) return Usage(io, kUsage);
  const std::string& verb = args.words[1];
  Client client(args.Option("socket", kDefaultAdminSocket));
  if (verb == "list" && args.words.size() == 2) {
    leash::v1::ListProfilesResponse response;
    grpc::Status status = client.control().ListProfiles(client.Context().get(), {}, &response);
    if (!status.ok()) return ReportFailure(io, client.Explain(status));
    if (args.json) {
      io.out << ToJson(response) << "\n";
    } else if (response.profiles().empty()) {
      io.out << "no profiles\n";
    } else {
      for (const auto& profile : response.profiles()) {
        io.out << profile.name() << "  bound to: "
               << (profile.bound_to().empty() ? "-" : absl::StrJoin(profile.bound_to(), ", "))
               << "\n";
      }
    }
    return base::kExitOk;
  }
  if (args.words.size() != 3) return Usage(io, kUsage);
  const std::string& name = args.words[2];
  if (verb == "show") {
    leash::v1::ShowProfileRequest request;
    request.set_name(name);
    leash::v1::ShowProfileResponse response;
    grpc::Status status = client.control().ShowProfile(client.Context().get(), request, &response);
    if (!status.ok()) return ReportFailure(io, client.Explain(status));
    if (args.json) {
      io.out << ToJson(response) << "\n";
    } else {
      io.out << "# profile " << response.name() << "; bound to: "
             << (response.bound_to().empty() ? "-" : absl::StrJoin(response.bound_to(), ", "))
             << "\n"
             << response.yaml();
    }
    return base::kExitOk;
  }
  if (verb == "delete") {
  if (std::optional<int> refused = RefuseWriteToAnotherConfig(args, client, io)) return *refused;
    leash::v1::DeleteProfileRequest request;
    request.set_name(name);
    for (const std::string& ack : args.acks) request.add_acks(ack);
    request.set_who(DescribeCaller(ReadCallerFacts()));
    request.set_no_reconcile(args.no_reconcile);
    leash::v1::PolicyWriteResponse response;
    grpc::Status status =
        client.control().DeleteProfile(client.Context(true).get(), request, &response);
    if (!status.ok()) return ReportFailure(io, client.Explain(status));
    return ReportWrite(response, args, io);
  }
  if (verb == "save") {
    const std::string from = args.Option("from");
    if (from.empty()) return Usage(io, kUsage);
    if (std::optional<int> refused = RefuseWriteToAnotherConfig(args, client, io)) return *refused;
    // Over the cap or not UTF-8, the text is refused here with the file named, not sent for
    // gRPC to refuse in its own words.
    absl::StatusOr<std::string> yaml = ReadPolicyFile(from);
    if (!yaml.ok()) {
      io.err << "leash profile save: " << yaml.status().message() << "\n";
      return base::kExitRefused;
    }
    leash::v1::SaveProfileRequest request;
    request.set_name(name);
    request.set_yaml(*std::move(yaml));
    request.set_from_path(from);
    for (const std::string& ack : args.acks) request.add_acks(ack);
    request.set_no_reconcile(args.no_reconcile);
    // The consent ledger records who consented to what the save changes (as for unbind).
    request.set_who(DescribeCaller(ReadCallerFacts()));
    leash::v1::PolicyWriteResponse response;
    grpc::Status status =
        client.control().SaveProfile(client.Context(true).get(), request, &response);
    if (!status.ok()) return ReportFailure(io, client.Explain(status));
    return ReportWrite(response, args, io);
  }
  return Usage(io, kUsage);
}

int RunBind(const Args& args, Io io) {
  if (args.words.size() != 3) {
    return Usage(io, "leash bind global|agent:<account> <profile> [--ack '<field>:<value>']...");
  }
  Client client(args.Option("socket", kDefaultAdminSocket));
  if (std::optional<int> refused = RefuseWriteToAnotherConfig(args, client, io)) return *refused;
  leash::v1::BindRequest request;
  request.set_scope(args.words[1]);
  request.set_profile(args.words[2]);
  for (const std::string& ack : args.acks) request.add_acks(ack);
  request.set_no_reconcile(args.no_reconcile);
  // The consent ledger records who consented to what the bind changes (as for unbind).
  request.set_who(DescribeCaller(ReadCallerFacts()));
  leash::v1::PolicyWriteResponse response;
  grpc::Status status = client.control().Bind(client.Context(true).get(), request, &response);
  if (!status.ok()) return ReportFailure(io, client.Explain(status));
  return ReportWrite(response, args, io);
}

int RunUnbind(const Args& args, Io io) {
  if (args.words.size() != 2) {
    return Usage(io, "leash unbind global|agent:<account> [--ack '<field>:<value>']...");
  }
  Client client(args.Option("socket", kDefaultAdminSocket));
  if (std::optional<int> refused = RefuseWriteToAnotherConfig(args, client, io)) return *refused;
  leash::v1::UnbindRequest request;
  request.set_scope(args.words[1]);
  for (const std::string& ack : args.acks) request.add_acks(ack);
  request.set_no_reconcile(args.no_reconcile);
  // The ledger records who removed the binding: leashd writes the credentials it sees (root)
  // and this, the operator behind sudo and the session's login UID, as the client's claim.
  request.set_who(DescribeCaller(ReadCallerFacts()));
  leash::v1::PolicyWriteResponse response;
  grpc::Status status = client.control().Unbind(client.Context(true).get(), request, &response);
  if (!status.ok()) return ReportFailure(io, client.Explain(status));
  return ReportWrite(response, args, io);
}

int RunBindings(const Args& args, Io io) {
  if (args.words.size() != 1) return Usage(io, "leash bindings");
  Client client(args.Option("socket", kDefaultAdminSocket));
  leash::v1::ListBindingsResponse response;
  grpc::Status status = client.control().ListBindings(client.Context().get(), {}, &response);
  if (!status.ok()) return ReportFailure(io, client.Explain(status));
  if (args.json) {
    io.out << ToJson(response) << "\n";
    return base::kExitOk;
  }
  io.out << RenderBindings(response);
  return base::kExitOk;
}

int RunEntries(const Args& args, Io io) {
  constexpr char kUsage[] =
      "leash <surface> list  |  leash <surface> remove <entry> [--ack '<field>:<value>']...";
  if (args.words.size() < 2) return Usage(io, kUsage);
  absl::StatusOr<engine::Surface> surface = engine::ParseSurfaceName(args.words[0]);
  if (!surface.ok()) return ReportFailure(io, surface.status());
  Client client(args.Option("socket", kDefaultAdminSocket));
  const std::string& verb = args.words[1];
  if (verb == "list" && args.words.size() == 2) {
    leash::v1::ListEntriesRequest request;
    request.set_surface(*surface);
    leash::v1::ListEntriesResponse response;
    grpc::Status status =
        client.control().ListEntries(client.Context().get(), request, &response);
    if (!status.ok()) return ReportFailure(io, client.Explain(status));
    io.out << (args.json ? ToJson(response) + "\n" : RenderEntries(response));
    return base::kExitOk;
  }
  if (verb != "remove" || args.words.size() != 3) return Usage(io, kUsage);
  if (std::optional<int> refused = RefuseWriteToAnotherConfig(args, client, io)) return *refused;
  leash::v1::RemoveEntryRequest request;
  request.set_surface(*surface);
  request.set_entry(args.words[2]);
  for (const std::string& ack : args.acks) request.add_acks(ack);
  request.set_who(DescribeCaller(ReadCallerFacts()));
  request.set_no_reconcile(args.no_reconcile);
  leash::v1::PolicyWriteResponse response;
  grpc::Status status =
      client.control().RemoveEntry(client.Context(true).get(), request, &response);
  if (!status.ok()) return ReportFailure(io, client.Explain(status));
  return ReportWrite(response, args, io);
}

int RunReconcile(const Args& args, Io io) {
  Client client(args.Option("socket", kDefaultAdminSocket));
  leash::v1::ReconcileResponse response;
  grpc::Status status = client.control().Reconcile(client.Context(true).get(), {}, &response);
  if (!status.ok()) return ReportFailure(io, client.Explain(status));
  if (args.json) {
    io.out << ToJson(response) << "\n";
  } else {
    io.out << RenderReconcile(response.report());
  }
  if (!response.report().error().empty()) {
    io.err << "leash: the reconcile failed and changed nothing: " << response.report().error()
           << "\n";
    return base::kExitRefused;
  }
  if (response.report().not_in_force_size() > 0) {
    io.err << "leash: the reconcile ran, but the policy on disk is NOT in force:\n"
           << RenderNotInForce(response.report());
    return base::kExitRefused;
  }
  return base::kExitOk;
}

}  // namespace leash::cli
