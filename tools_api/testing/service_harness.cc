#include "tools_api/testing/service_harness.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace leash::tools::testing {

absl::StatusOr<std::unique_ptr<ServiceHarness>> ServiceHarness::Start(
    const std::string& dir, ToolsServiceOptions options) {
  std::unique_ptr<ServiceHarness> harness(new ServiceHarness());
  absl::StatusOr<std::unique_ptr<ToolsService>> service = ToolsService::Create(std::move(options));
  if (!service.ok()) return service.status();
  harness->service_ = std::move(*service);

  // mkdtemp for a unique short name, then swap the directory for a symlink to `dir`.
  char link[] = "/tmp/leash-tools-XXXXXX";
  if (mkdtemp(link) == nullptr || rmdir(link) != 0 || symlink(dir.c_str(), link) != 0) {
    return absl::InternalError(absl::StrCat("symlink ", link, " -> ", dir, ": ", strerror(errno)));
  }
  harness->link_ = link;
  harness->target_ = absl::StrCat("unix:", link, "/tools.sock");
  harness->socket_path_ = absl::StrCat(dir, "/tools.sock");

  grpc::ServerBuilder builder;
  builder.AddListeningPort(harness->target_, grpc::InsecureServerCredentials());
  RegisterToolsService(builder, *harness->service_);
  harness->server_ = builder.BuildAndStart();
  if (harness->server_ == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot serve on ", harness->target_));
  }
  return harness;
}

ServiceHarness::~ServiceHarness() {
  if (server_ != nullptr) server_->Shutdown();
  if (!link_.empty()) unlink(link_.c_str());
}

}  // namespace leash::tools::testing
