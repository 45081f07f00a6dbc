#include "controlplane/tools_group.h"

#include <grp.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

extern char** environ;

namespace leash::controlplane {
namespace {

// Runs argv (absolute path first); returns its exit code, or -1 when it could not run.
int Run(const std::vector<std::string>& argv) {
  std::vector<char*> raw;
  for (const std::string& arg : argv) raw.push_back(const_cast<char*>(arg.c_str()));
  raw.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, raw[0], nullptr, nullptr, raw.data(), environ) != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::optional<gid_t> LookupGroup(const std::string& name) {
  struct group entry;
  struct group* found = nullptr;
  std::vector<char> buffer(16384);
  if (getgrnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found) != 0 ||
      found == nullptr) {
    return std::nullopt;
  }
  return found->gr_gid;
}

std::string GroupName(gid_t gid) {
  struct group entry;
  struct group* found = nullptr;
  std::vector<char> buffer(16384);
  if (getgrgid_r(gid, &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr) {
    return found->gr_name;
  }
  return absl::StrCat("gid ", gid);
}

}  // namespace

absl::StatusOr<ToolsGroup> EnsureToolsGroup(const std::string& name, const std::string& user,
                                            const std::string& socket_path) {
  ToolsGroup out;
  out.name = name;
  std::optional<gid_t> gid = LookupGroup(name);
  if (!gid) {
    // useradd/groupadd elsewhere on the host hold the account files' lock for a moment: a
    // failed groupadd is retried before it counts, and "already exists" (9) is someone else's
    // success.
    for (int attempt = 0; attempt < 20 && !gid; ++attempt) {
      const int code = Run({"/usr/sbin/groupadd", "--system", name});
      gid = LookupGroup(name);
      if (!gid && code != 0) absl::SleepFor(absl::Milliseconds(100));
    }
    if (!gid) {
      return absl::InternalError(absl::StrCat(
          "the tools socket's group '", name, "' does not exist and `groupadd --system ", name,
          "` failed; create it by hand with that command and start leashd again"));
    }
    std::string user_note;
    if (!user.empty()) {
      const int code = Run({"/usr/sbin/usermod", "--append", "--groups", name, user});
      user_note = code == 0 ? absl::StrCat("; ", user, " (the leashed user) was added to it")
                            : absl::StrCat("; adding ", user, " to it failed (usermod exit ",
                                           code, "): run `usermod -aG ", name, " ", user, "`");
    }
    out.notices.push_back(absl::StrCat(
        "created the group ", name, " (gid ", *gid, ") for the tools socket", user_note,
        ". Add the account that calls CheckTool with: usermod -aG ", name, " <account>"));
  }
  out.gid = *gid;
  struct stat st;
  if (lstat(socket_path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_gid != out.gid) {
    out.notices.push_back(absl::StrCat(
        "the tools socket's group was ", GroupName(st.st_gid), "; it is now ", name,
        " (a group that reads nothing else, where the leashed user's group also reads ",
        "/etc/leash/leash.yaml). Accounts that called CheckTool through the old group: ",
        "usermod -aG ", name, " <account>"));
  }
  return out;
}

}  // namespace leash::controlplane
