// The real leashd for a test: its own config, state and run folders under a short /tmp path,
// running in the test's network namespace (nft rules stay there) but in the test's mount
// namespace, with its real sidecars, the watcher's marks confined to the test's tmpfs. Stopped
// (SIGTERM, then SIGKILL) when the fixture goes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "leash/v1/control.grpc.pb.h"
#include "test/fixtures/account_view.h"
#include "test/fixtures/netns.h"
#include "test/fixtures/subprocess.h"
#include "test/fixtures/temp_dir.h"

namespace leash::testing {

class LeashdInstance {
 public:
  // Writes `floor_yaml` as the config and starts leashd in `ns`, marks confined to
  // `mark_only_under`. Returns once the admin socket answers GetStatus (or with leashd's log
  // when it exits or does not answer in time).
  // `extra_flags` are appended to leashd's command line ("--netfilter=iptables").
  // With `accounts`, leashd (and `leash` run through Cli) sees the host's accounts through that
  // view: its own test's accounts and no other run's (account_view.h). It outlives the instance.
  static absl::StatusOr<std::unique_ptr<LeashdInstance>> Start(
      const std::string& floor_yaml, const NetNamespace& ns, const std::string& mark_only_under,
      const std::vector<std::string>& extra_flags = {}, AccountView* accounts = nullptr);
  ~LeashdInstance();

  leash::v1::Control::Stub& control() { return *control_; }
  absl::StatusOr<leash::v1::StatusResponse> Status();
  // Sends SIGHUP to leashd's main PID (from its pidfile, as Sentinel's non-systemd path does).
  absl::Status Sighup();
  // Waits until leashd has run at least `passes` reconcile passes.
  absl::Status WaitForPasses(uint64_t passes, absl::Duration timeout = absl::Seconds(30));
  // SIGTERM and wait; returns the exit status (the stop path releases every chain).
  absl::StatusOr<int> Stop(absl::Duration timeout = absl::Seconds(20));
  // Waits for leashd to end by itself (no signal sent); its wait status.
  absl::StatusOr<int> WaitForExit(absl::Duration timeout);
  // True once Stop or WaitForExit saw the process end (until Relaunch).
  bool stopped() const { return stopped_; }
  // Starts leashd again with the same command line (folders, config, namespace) once the
  // previous process has gone, however it went; returns once the admin socket answers.
  // With `pass_fds`: as systemd starts a service again with its file-descriptor store: they
  // are descriptors 3.. of the new leashd, with LISTEN_FDS, LISTEN_FDNAMES (`fd_names`, joined
  // by ':') and LISTEN_PID (the new process) set.
  absl::Status Relaunch(const std::vector<int>& pass_fds = {},
                        const std::vector<std::string>& fd_names = {});
  // The command line leashd was started with: a second leashd on the same folders.
  const std::vector<std::string>& argv() const { return argv_; }
  // `leash <args>` against this instance (config and socket filled in), as root.
  absl::StatusOr<RunResult> Cli(const std::vector<std::string>& args);
  // Cli's command line before any account view's namespace: for a `leash` run in the
  // background or through a shell.
  std::vector<std::string> CliArgv(const std::vector<std::string>& args) const;
  // Shows the running leashd what its account view now holds (after Show/Hide), as useradd
  // and userdel on the host would.
  absl::Status PublishAccounts();

  std::string Log() const;
  // How many times this leashd has said a standby of the watcher is ready.
  int StandbysReady() const;
  std::string Decisions() const;
  const std::string& config_path() const { return config_; }
  const std::string& state_dir() const { return state_; }
  const std::string& run_dir() const { return run_; }
  std::string admin_socket() const { return run_ + "/leash.sock"; }
  std::string tools_socket() const { return run_ + "/tools.sock"; }
  std::string decisions_path() const { return dir_->Join("decisions.jsonl"); }
  pid_t pid() const { return process_.pid(); }
  // `argv` in this leashd's mount namespace (nsenter). The watcher judges an open made through
  // a mount of another mount namespace as foreign and denies it whatever the policy says, so a
  // test whose leashd runs in a namespace of its own (an account view) acts as the agent from
  // there, or it would see every open denied.
  std::vector<std::string> InItsMounts(const std::vector<std::string>& argv) const;

 private:
  LeashdInstance(std::unique_ptr<TempDir> dir, std::vector<std::string> argv,
                 Background process);
  // Waits until the admin socket answers or the process exits; an error carries the log.
  absl::Status WaitUntilUp();
  std::unique_ptr<TempDir> dir_;
  std::vector<std::string> argv_;
  Background process_;
  std::string config_, state_, run_;
  std::unique_ptr<leash::v1::Control::Stub> control_;
  AccountView* accounts_ = nullptr;
  bool stopped_ = false;
};

// The whole text of a file ("" when it cannot be read).
std::string ReadAll(const std::string& path);

// Absolute path of a binary in this test's runfiles ("controlplane/main/leashd").
std::string RunfilePath(const std::string& relative);

}  // namespace leash::testing
