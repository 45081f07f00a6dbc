#include "test/leashd/leashd_fixture.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "grpcpp/grpcpp.h"

namespace leash::testing {
std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string RunfilePath(const std::string& relative) {
  char cwd[4096];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) return relative;
  return absl::StrCat(cwd, "/", relative);
}

LeashdInstance::LeashdInstance(std::unique_ptr<TempDir> dir, std::vector<std::string> argv,
                               Background process)
    : dir_(std::move(dir)), argv_(std::move(argv)), process_(std::move(process)) {
  config_ = dir_->Join("leash.yaml");
  state_ = dir_->Join("state");
  run_ = dir_->Join("run");
  control_ = leash::v1::Control::NewStub(
      grpc::CreateChannel("unix:" + admin_socket(), grpc::InsecureChannelCredentials()));
}

absl::StatusOr<std::unique_ptr<LeashdInstance>> LeashdInstance::Start(
    const std::string& floor_yaml, const NetNamespace& ns, const std::string& mark_only_under,
    const std::vector<std::string>& extra_flags, AccountView* accounts) {
  absl::StatusOr<std::unique_ptr<TempDir>> dir = TempDir::Create("lid");
  if (!dir.ok()) return dir.status();
  // Other accounts reach the tools socket through these folders.
  chmod((*dir)->path().c_str(), 0755);
  mkdir((*dir)->Join("run").c_str(), 0755);
  std::ofstream((*dir)->Join("leash.yaml")) << floor_yaml;
  std::ofstream((*dir)->Join("resolv.conf")) << "nameserver 192.0.2.53\n";
  std::vector<std::string> leashd = {
      RunfilePath("controlplane/main/leashd"), "--config=" + (*dir)->Join("leash.yaml"),
      "--state-dir=" + (*dir)->Join("state"), "--run-dir=" + (*dir)->Join("run"),
      "--resolv-conf=" + (*dir)->Join("resolv.conf"),
      "--fswatch-mark-only-under=" + mark_only_under,
      "--proxy-binary=" + RunfilePath("proxy/leash-proxy"),
      "--fswatch-binary=" + RunfilePath("fswatch/leash-fswatch")};
  leashd.insert(leashd.end(), extra_flags.begin(), extra_flags.end());
  if (accounts != nullptr) {
    absl::StatusOr<std::vector<std::string>> wrapped = accounts->Wrap(leashd);
    if (!wrapped.ok()) return wrapped.status();
    leashd = *std::move(wrapped);
  }
  const std::vector<std::string> argv = ns.ExecSharingMounts(leashd);
  absl::StatusOr<Background> process = Background::Start(argv, (*dir)->Join("leashd.log"));
  if (!process.ok()) return process.status();
  std::unique_ptr<LeashdInstance> instance(
      new LeashdInstance(*std::move(dir), argv, *std::move(process)));
  instance->accounts_ = accounts;
  if (absl::Status up = instance->WaitUntilUp(); !up.ok()) return up;
  return instance;
}

absl::Status LeashdInstance::WaitUntilUp() {
  // Up means through its whole start: the admin socket answers from before the first reconcile,
  // but leashd writes its pidfile only once that pass is in force and the tools socket is open
  // (the point systemd is told READY), so a test starts from the state an operator would see.
  // (A pidfile a killed leashd left names a process that is gone.)
  const bool up = WaitFor(
      [&] {
        if (!process_.Running()) return true;
        int pid = 0;
        return absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadAll(run_ + "/leashd.pid")),
                                &pid) &&
               pid > 0 && kill(pid, 0) == 0 && Status().ok();
      },
      absl::Seconds(60));
  if (!up || !process_.Running()) {
    return absl::UnavailableError(absl::StrCat("leashd did not come up:\n", Log()));
  }
  return absl::OkStatus();
}

absl::Status LeashdInstance::Relaunch(const std::vector<int>& pass_fds,
                                      const std::vector<std::string>& fd_names) {
  if (process_.Running()) {
    return absl::FailedPreconditionError("Relaunch: the previous leashd is still running");
  }
  // Appended to the same log: the first run's lines stay readable above the second's.
  const std::string log = dir_->Join("leashd.log");
  // The shell's pid is leashd's: every step after it execs.
  const std::string listen =
      pass_fds.empty() ? ""
                       : absl::StrCat("LISTEN_PID=$$ LISTEN_FDS=", pass_fds.size(),
                                      " LISTEN_FDNAMES='", absl::StrJoin(fd_names, ":"), "' ");
  std::vector<std::string> argv = {"/bin/sh", "-c",
                                   absl::StrCat(listen, "exec \"$@\" >>\"$0\" 2>&1"), log};
  argv.insert(argv.end(), argv_.begin(), argv_.end());
  absl::StatusOr<Background> process = Background::Start(argv, "", pass_fds);
  if (!process.ok()) return process.status();
  process_ = *std::move(process);
  stopped_ = false;
  return WaitUntilUp();
}

LeashdInstance::~LeashdInstance() {
  if (!stopped_) Stop().IgnoreError();
}

absl::StatusOr<leash::v1::StatusResponse> LeashdInstance::Status() {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  leash::v1::StatusResponse response;
  grpc::Status status = control_->GetStatus(&context, {}, &response);
  if (!status.ok()) return absl::UnavailableError(status.error_message());
  return response;
}

absl::Status LeashdInstance::Sighup() {
  std::string text = ReadAll(run_ + "/leashd.pid");
  int pid = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &pid) || pid <= 0) {
    return absl::NotFoundError(absl::StrCat("no pid in ", run_, "/leashd.pid: '", text, "'"));
  }
  if (kill(pid, SIGHUP) != 0) return absl::ErrnoToStatus(errno, "kill -HUP");
  return absl::OkStatus();
}

absl::Status LeashdInstance::WaitForPasses(uint64_t passes, absl::Duration timeout) {
  uint64_t seen = 0;
  const bool done = WaitFor(
      [&] {
        absl::StatusOr<leash::v1::StatusResponse> status = Status();
        if (status.ok()) seen = status->reconcile_passes();
        return seen >= passes;
      },
      timeout);
  if (done) return absl::OkStatus();
  return absl::DeadlineExceededError(
      absl::StrCat("leashd ran ", seen, " passes, not ", passes, "\n", Log()));
}

absl::StatusOr<int> LeashdInstance::Stop(absl::Duration timeout) {
  stopped_ = true;
  process_.Signal(SIGTERM);
  absl::StatusOr<int> status = process_.Wait(timeout);
  if (!status.ok()) {
    process_.Signal(SIGKILL);
    process_.Wait(absl::Seconds(5)).IgnoreError();
  }
  return status;
}

absl::StatusOr<int> LeashdInstance::WaitForExit(absl::Duration timeout) {
  absl::StatusOr<int> status = process_.Wait(timeout);
  if (status.ok()) stopped_ = true;
  return status;
}

std::vector<std::string> LeashdInstance::CliArgv(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {RunfilePath("cli/leash"), "--config=" + config_,
                                   "--socket=" + admin_socket()};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

absl::StatusOr<RunResult> LeashdInstance::Cli(const std::vector<std::string>& args) {
  std::vector<std::string> argv = CliArgv(args);
  if (accounts_ != nullptr) {
    // The CLI reads accounts too (the configured user): it sees leashd's view, in leashd's
    // mount namespace while leashd runs, in one of its own otherwise.
    if (process_.Running()) {
      std::vector<std::string> in_leashd = {"nsenter", absl::StrCat("--mount=/proc/", pid(), "/ns/mnt"),
                                            "--"};
      in_leashd.insert(in_leashd.end(), argv.begin(), argv.end());
      argv = std::move(in_leashd);
    } else {
      absl::StatusOr<std::vector<std::string>> wrapped = accounts_->Wrap(argv);
      if (!wrapped.ok()) return wrapped.status();
      argv = *std::move(wrapped);
    }
  }
  return Run(argv, absl::Seconds(120));
}

absl::Status LeashdInstance::PublishAccounts() {
  if (accounts_ == nullptr) {
    return absl::FailedPreconditionError("PublishAccounts: leashd was started without a view");
  }
  return accounts_->Publish(pid());
}

std::string LeashdInstance::Log() const { return ReadAll(dir_->Join("leashd.log")); }
std::string LeashdInstance::Decisions() const { return ReadAll(decisions_path()); }

std::vector<std::string> LeashdInstance::InItsMounts(const std::vector<std::string>& argv) const {
  std::vector<std::string> out = {"nsenter", absl::StrCat("--mount=/proc/", pid(), "/ns/mnt"),
                                  "--"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

int LeashdInstance::StandbysReady() const {
  const std::string log = Log();
  int n = 0;
  for (size_t at = log.find("leash-fswatch standby (pid "); at != std::string::npos;
       at = log.find("leash-fswatch standby (pid ", at + 1)) {
    const size_t end = log.find('\n', at);
    n += absl::StrContains(log.substr(at, end - at), ") ready");
  }
  return n;
}

}  // namespace leash::testing
