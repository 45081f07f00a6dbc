// `leash logs`: the decisions as leashd streams them (Control.WatchDecisions) — the log file's
// lines from a start point, then, with --follow, each new one as it happens. Nothing is
// polled: the stream waits on leashd, which waits on its writers.
#include <chrono>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/json_line.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/logs_render.h"
#include "cli/offline.h"
#include "engine/config_defaults.h"

namespace leash::cli {

int RunLogs(const Args& args, Io io) {
  if (args.words.size() != 1) {
    io.err << "usage: leash logs [--follow] [--account A] [--surface S] [--action block|allow] "
              "[--since T] [--until T] [--ref R] [--tail N] [--json]\n";
    return base::kExitUsage;
  }
  absl::StatusOr<leash::v1::WatchDecisionsRequest> request = LogsRequest(args, absl::Now());
  if (!request.ok()) {
    io.err << "leash logs: " << request.status().message() << "\n";
    return base::kExitUsage;
  }
  Client client(args.Option("socket", kDefaultAdminSocket));
  grpc::ClientContext context;
  // A replay has a deadline; a follow lasts until the operator stops it (or --until passes).
  if (!request->follow()) {
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(10));
  }
  std::unique_ptr<grpc::ClientReader<leash::v1::WatchDecisionsEvent>> reader =
      client.control().WatchDecisions(&context, *request);
  leash::v1::WatchDecisionsEvent event;
  while (reader->Read(&event)) {
    if (event.live()) continue;  // the replay is done; nothing to print
    if (args.json) {
      if (event.line().empty()) {
        // A notice (lines lost, a ref not found) is a JSON line of its own beside the log's
        // lines, which all carry "ts".
        std::string notice = "{\"notice\":";
        base::AppendJsonString(event.notice(), &notice);
        io.out << notice << "}\n";
      } else {
        io.out << event.line() << "\n";
      }
    } else if (event.line().empty()) {
      io.err << HumanLine(event) << "\n";
    } else {
      io.out << HumanLine(event) << "\n";
    }
    io.out.flush();
    if (!io.out) {  // the reader went away (a closed pipe)
      context.TryCancel();
      break;
    }
  }
  const grpc::Status status = reader->Finish();
  if (!io.out || status.error_code() == grpc::StatusCode::CANCELLED) return base::kExitOk;
  // leashd's cap on watchers is a sentence of its own; Explain reads this code as a message
  // over the admin socket's size limit, which gRPC words "Received message larger than max".
  if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
      status.error_message().find("larger than max") == std::string::npos) {
    return ReportFailure(io, absl::ResourceExhaustedError(status.error_message()));
  }
  if (!status.ok()) {
    absl::Status explained = client.Explain(status);
    if (absl::IsUnavailable(explained)) {
      // The stream needs leashd; the durable record does not. A floor that cannot be read
      // names the default file.
      absl::StatusOr<leash::v1::Config> floor = LoadConfigFile(args.config_path);
      explained = absl::UnavailableError(absl::StrCat(
          explained.message(), "; without leashd the decisions are still in the log file, ",
          floor.ok() ? engine::DecisionLogFile(*floor) : std::string(engine::kDefaultDecisionLog),
          " (`leash suggest` reads it too)"));
    }
    return ReportFailure(io, explained);
  }
  return base::kExitOk;
}

}  // namespace leash::cli
