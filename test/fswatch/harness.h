// What the fswatch root tests and benchmark share: the real leash-fswatch started on a map
// file and confined to the test's tmpfs, its stderr and decision log in files, and a directory
// on an unmarked filesystem holding the probe program test accounts run.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "leash/v1/policy_stream.pb.h"
#include "test/fixtures/subprocess.h"

namespace leash::testing {

// Where the binaries are, relative to the test's runfiles directory.
inline constexpr char kFswatchBinary[] = "fswatch/leash-fswatch";
// The testonly build with the fault hooks (--test-faults, LEASH_FSWATCH_TEST_FAULT).
inline constexpr char kFswatchWithTestFaultsBinary[] = "fswatch/leash-fswatch-with-test-faults";
inline constexpr char kProbeBinary[] = "test/fswatch/probe";

// A directory under /tmp (the root filesystem, never marked by a test), world-readable, with
// a copy of the probe program. Removed on destruction.
class ProbeDir {
 public:
  static absl::StatusOr<std::unique_ptr<ProbeDir>> Create();
  ~ProbeDir();
  const std::string& path() const { return path_; }
  std::string probe() const { return path_ + "/probe"; }

 private:
  explicit ProbeDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

struct WatcherProcess {
  std::unique_ptr<Background> process;
  std::string stderr_path;
  std::string log_path;  // empty when the log went to a descriptor the caller chose
  std::string Stderr() const;
  std::string Log() const;
};

struct WatcherStart {
  leash::v1::PolicyUpdate map;
  // The tmpfs the marks are confined to (required: tests never mark anything else).
  std::string tmpfs;
  // Working files (map, logs) go here.
  std::string work_dir;
  std::vector<std::string> extra_args;
  // When >= 0: the decision log descriptor handed over (inherited); else a file in work_dir.
  int log_fd = -1;
  std::string name = "watcher";
  std::vector<std::string> env;  // NAME=value, set for the watcher only
  // Another leash-fswatch to run instead of kFswatchBinary (the benchmark's --compare).
  std::string binary;
  // When >= 0: the watcher reads this group (sidecar::OpenPermissionGroup) and notes what it
  // reads in this pending table (sidecar::PendingTable::Create), as leashd hands them to it.
  // Close the group only once the watcher is gone: a marked group nobody reads holds every open.
  int group_fd = -1;
  int pending_table_fd = -1;
  // When >= 0: the writer's end of a live decision feed (controlplane/decision_feed.h), handed
  // over as --decision-feed-fd, as leashd hands it. A build from before that flag refuses it.
  int feed_fd = -1;
  // What stderr says once the watcher is up; default "map version <v> in force" (a --standby
  // watcher says "standing by" instead).
  std::string ready_text;
};

// Starts leash-fswatch and waits until it says the map is in force (or fails, returning its
// stderr in the error).
absl::StatusOr<WatcherProcess> StartWatcher(const WatcherStart& start,
                                            absl::Duration ready_timeout = absl::Seconds(15));

// A SubjectPolicy with a whitelist/blacklist filesystem and commands policy.
leash::v1::SubjectPolicy Subject(uint32_t uid, const std::string& account,
                                 leash::v1::Mode fs_mode, std::vector<std::string> fs_allow,
                                 std::vector<std::string> fs_deny, leash::v1::Mode cmd_mode,
                                 std::vector<std::string> cmd_allow,
                                 std::vector<std::string> cmd_deny,
                                 const std::string& fail_mode = "closed");
leash::v1::SubjectPolicy NoPolicySubject(uint32_t uid, const std::string& account,
                                         const std::string& fail_mode);

// Reads a whole file ("" when missing).
std::string ReadFileOrEmpty(const std::string& path);
// Writes `content` to `path` with `mode`.
absl::Status WriteFile(const std::string& path, const std::string& content, int mode = 0644);

}  // namespace leash::testing
