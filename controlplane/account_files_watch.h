// Asks for a reconcile when a file of the account database changes: who the subjects are
// (passwd), and the host IDs each can run as inside a user namespace (subuid, subgid, group,
// nsswitch.conf). `usermod --add-subuids` sends no signal, and until a pass reads the new
// range an agent could map it unconfined; so leashd does not wait for one.
//
// inotify on the folder, not the files: the shadow tools replace a file by renaming a new one
// over it, which a watch on the old inode would never see. The thread makes no open of its
// own (the watcher may be judging opens of /etc), it only reads the inotify descriptor.
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace leash::controlplane {

class AccountFilesWatch {
 public:
  // The names under /etc it watches by default.
  static const std::set<std::string>& DefaultNames();

  // Watches `names` in `dir`; `on_change` runs on the watch's thread after each change (a
  // burst of events is one call per read). An error if inotify cannot watch `dir`.
  static absl::StatusOr<std::unique_ptr<AccountFilesWatch>> Start(
      const std::string& dir, std::set<std::string> names, std::function<void()> on_change);
  ~AccountFilesWatch();  // stops the thread

 private:
  AccountFilesWatch(int inotify_fd, int stop_fd, std::set<std::string> names,
                    std::function<void()> on_change);
  void Run();

  const int inotify_fd_;
  const int stop_fd_;
  const std::set<std::string> names_;
  const std::function<void()> on_change_;
  std::thread thread_;
};

}  // namespace leash::controlplane
