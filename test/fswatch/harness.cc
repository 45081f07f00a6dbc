#include "test/fswatch/harness.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace leash::testing {

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

absl::Status WriteFile(const std::string& path, const std::string& content, int mode) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
  const ssize_t n = write(fd, content.data(), content.size());
  fchmod(fd, mode);
  close(fd);
  if (n != static_cast<ssize_t>(content.size())) {
    return absl::ErrnoToStatus(errno, absl::StrCat("write ", path));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ProbeDir>> ProbeDir::Create() {
  char dir[] = "/tmp/leash-fsw-probe-XXXXXX";
  if (mkdtemp(dir) == nullptr) return absl::ErrnoToStatus(errno, "mkdtemp /tmp/leash-fsw-probe");
  chmod(dir, 0755);
  auto probe_dir = std::unique_ptr<ProbeDir>(new ProbeDir(dir));
  absl::StatusOr<std::string> copied =
      RunOk({"cp", kProbeBinary, probe_dir->probe()});
  if (!copied.ok()) return copied.status();
  chmod(probe_dir->probe().c_str(), 0755);
  return probe_dir;
}

ProbeDir::~ProbeDir() { Run({"rm", "-rf", path_}).IgnoreError(); }

std::string WatcherProcess::Stderr() const { return ReadFileOrEmpty(stderr_path); }
std::string WatcherProcess::Log() const { return ReadFileOrEmpty(log_path); }

absl::StatusOr<WatcherProcess> StartWatcher(const WatcherStart& start,
                                            absl::Duration ready_timeout) {
  if (start.tmpfs.empty()) {
    return absl::InvalidArgumentError("a test watcher must be confined to the test's tmpfs");
  }
  const std::string map_path = absl::StrCat(start.work_dir, "/", start.name, ".map");
  if (absl::Status written = WriteFile(map_path, start.map.SerializeAsString()); !written.ok()) {
    return written;
  }
  WatcherProcess watcher;
  watcher.stderr_path = absl::StrCat(start.work_dir, "/", start.name, ".stderr");
  unlink(watcher.stderr_path.c_str());  // never mistake an earlier run's "in force" for this one
  int log_fd = start.log_fd;
  bool close_log = false;
  if (log_fd < 0) {
    watcher.log_path = absl::StrCat(start.work_dir, "/", start.name, ".jsonl");
    // Not O_CLOEXEC: the watcher inherits it as its decision log.
    log_fd = open(watcher.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    if (log_fd < 0) return absl::ErrnoToStatus(errno, watcher.log_path);
    close_log = true;
  }
  std::vector<std::string> argv;
  if (!start.env.empty()) {
    argv.push_back("env");
    argv.insert(argv.end(), start.env.begin(), start.env.end());
  }
  argv.insert(argv.end(), {start.binary.empty() ? std::string(kFswatchBinary) : start.binary,
                           absl::StrCat("--initial-map=", map_path),
                           absl::StrCat("--mark-only-under=", start.tmpfs),
                           absl::StrCat("--decision-log-fd=", log_fd)});
  // Inheritable copies of the group and its table, and of the feed's end, for this watcher
  // alone.
  std::vector<int> handed;
  if (start.group_fd >= 0) {
    handed = {fcntl(start.group_fd, F_DUPFD, 3), fcntl(start.pending_table_fd, F_DUPFD, 3)};
    argv.push_back(absl::StrCat("--fanotify-fd=", handed[0]));
    argv.push_back(absl::StrCat("--pending-table-fd=", handed[1]));
  }
  if (start.feed_fd >= 0) {
    const int feed = fcntl(start.feed_fd, F_DUPFD, 3);
    if (feed < 0) {
      const int error = errno;
      for (int fd : handed) close(fd);
      if (close_log) close(log_fd);
      return absl::ErrnoToStatus(error, "dup of the decision feed's end");
    }
    handed.push_back(feed);
    argv.push_back(absl::StrCat("--decision-feed-fd=", feed));
  }
  argv.insert(argv.end(), start.extra_args.begin(), start.extra_args.end());
  absl::StatusOr<Background> process = Background::Start(argv, watcher.stderr_path);
  for (int fd : handed) close(fd);
  if (close_log) close(log_fd);
  if (!process.ok()) return process.status();
  watcher.process = std::make_unique<Background>(*std::move(process));
  const std::string ready = start.ready_text.empty()
                                ? absl::StrCat("map version ", start.map.version(), " in force")
                                : start.ready_text;
  const bool up = WaitFor(
      [&] {
        return absl::StrContains(watcher.Stderr(), ready) || !watcher.process->Running();
      },
      ready_timeout);
  if (!up || !absl::StrContains(watcher.Stderr(), ready)) {
    return absl::UnavailableError(
        absl::StrCat("leash-fswatch did not come up: ", watcher.Stderr()));
  }
  return watcher;
}

leash::v1::SubjectPolicy Subject(uint32_t uid, const std::string& account,
                                 leash::v1::Mode fs_mode, std::vector<std::string> fs_allow,
                                 std::vector<std::string> fs_deny, leash::v1::Mode cmd_mode,
                                 std::vector<std::string> cmd_allow,
                                 std::vector<std::string> cmd_deny,
                                 const std::string& fail_mode) {
  leash::v1::SubjectPolicy subject;
  subject.set_uid(uid);
  subject.set_account(account);
  leash::v1::Config& config = *subject.mutable_policy();
  config.set_fail_mode(fail_mode);
  config.mutable_filesystem()->set_mode(fs_mode);
  config.mutable_filesystem()->mutable_allow();
  config.mutable_filesystem()->mutable_deny();
  for (const auto& e : fs_allow) config.mutable_filesystem()->mutable_allow()->add_entries(e);
  for (const auto& e : fs_deny) config.mutable_filesystem()->mutable_deny()->add_entries(e);
  config.mutable_commands()->set_mode(cmd_mode);
  config.mutable_commands()->mutable_allow();
  config.mutable_commands()->mutable_deny();
  for (const auto& e : cmd_allow) config.mutable_commands()->mutable_allow()->add_entries(e);
  for (const auto& e : cmd_deny) config.mutable_commands()->mutable_deny()->add_entries(e);
  return subject;
}

leash::v1::SubjectPolicy NoPolicySubject(uint32_t uid, const std::string& account,
                                         const std::string& fail_mode) {
  leash::v1::SubjectPolicy subject;
  subject.set_uid(uid);
  subject.set_account(account);
  subject.mutable_no_policy()->set_reason("left discovery");
  subject.mutable_no_policy()->set_fail_mode(fail_mode);
  return subject;
}

}  // namespace leash::testing
