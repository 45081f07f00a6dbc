#include "controlplane/decision_log_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace leash::controlplane {
namespace {

// Closes a descriptor on every return path.
struct ScopedFd {
  int fd = -1;
  ~ScopedFd() {
    if (fd >= 0) close(fd);
  }
  int release() {
    const int out = fd;
    fd = -1;
    return out;
  }
};

// Why a folder that is already open (by its descriptor, so it is the one that was checked)
// must not hold the log, or an empty string. `last` is the log's own folder: there the sticky
// bit does not help, since anyone who can create a name in it can make the log's name first
// (the open refuses what it finds, but the log is then down); above it a root-owned sticky
// folder such as /tmp is safe, as nobody else can rename or remove root's folder in it.
std::string FolderProblem(const struct stat& st, const std::string& path, bool last) {
  if (st.st_uid != 0) {
    return absl::StrCat("the decision log's folder ", path, " is owned by uid ", st.st_uid,
                        ", not root; whoever owns it can swap the log for a link to any file "
                        "root writes. Fix it with: chown root ", path);
  }
  const bool sticky_above = !last && (st.st_mode & S_ISVTX) != 0;
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && !sticky_above) {
    return absl::StrCat("the decision log's folder ", path, " is writable by ",
                        (st.st_mode & S_IWOTH) ? "everyone" : "its group",
                        "; anyone who can write there can plant a link as the log. Fix it with: "
                        "chmod go-w ",
                        path);
  }
  return "";
}

}  // namespace

absl::StatusOr<int> OpenDecisionLog(const std::string& sink) {
  if (sink == "stdout") {
    const int fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) return absl::ErrnoToStatus(errno, "dup stdout for the decision log");
    return fd;
  }
  if (sink.empty() || sink[0] != '/' || sink.back() == '/') {
    return absl::InvalidArgumentError(absl::StrCat(
        "logging.decisions '", sink, "' must be an absolute file path or \"stdout\""));
  }
  std::vector<std::string> parts = absl::StrSplit(sink, '/', absl::SkipEmpty());
  const std::string name = parts.back();
  parts.pop_back();
  for (const std::string& part : parts) {
    if (part == "..") {
      return absl::InvalidArgumentError(
          absl::StrCat("logging.decisions '", sink, "' must not contain '..'"));
    }
  }

  // Walk from "/" one folder at a time, never following a link (O_NOFOLLOW on each component),
  // checking each folder through the descriptor that is then used to open the next: what is
  // checked is what is opened. openat2(RESOLVE_NO_SYMLINKS) would refuse the links too, but not
  // check each folder's owner and mode, so the walk is the one way for every kernel.
  ScopedFd dir{open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)};
  if (dir.fd < 0) return absl::ErrnoToStatus(errno, "open / for the decision log");
  std::string path;
  for (size_t i = 0; i <= parts.size(); ++i) {
    struct stat st;
    if (fstat(dir.fd, &st) != 0) {
      return absl::ErrnoToStatus(errno, absl::StrCat("stat ", path.empty() ? "/" : path));
    }
    const bool last = i == parts.size();
    if (std::string problem = FolderProblem(st, path.empty() ? "/" : path, last);
        !problem.empty()) {
      return absl::FailedPreconditionError(problem);
    }
    if (last) break;
    path += "/" + parts[i];
    int next = openat(dir.fd, parts[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0 && errno == ENOENT && i + 1 == parts.size()) {
      // Only the log's own folder is made; a missing folder above it is a typo to report.
      if (mkdirat(dir.fd, parts[i].c_str(), 0750) != 0 && errno != EEXIST) {
        return absl::ErrnoToStatus(errno, absl::StrCat("mkdir ", path, " for the decision log"));
      }
      next = openat(dir.fd, parts[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (next < 0) {
      if (errno == ELOOP || errno == ENOTDIR) {
        return absl::FailedPreconditionError(absl::StrCat(
            "the decision log's folder ", path,
            " is a symlink or not a folder; the log is never written through a link. Point "
            "logging.decisions at the real folder, or replace the link with a folder owned by "
            "root (chown root ", path, "; chmod go-w ", path, ")"));
      }
      return absl::ErrnoToStatus(errno, absl::StrCat("open ", path, " for the decision log"));
    }
    close(dir.fd);
    dir.fd = next;
  }

  // O_NONBLOCK: a FIFO planted as the log must not hang leashd before it is refused below.
  ScopedFd file{openat(dir.fd, name.c_str(),
                       O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
                           O_CLOEXEC,
                       0640)};
  if (file.fd < 0) {
    if (errno == ELOOP) {
      return absl::FailedPreconditionError(
          absl::StrCat("the decision log ", sink,
                       " is a symlink; the log is never written through a link. Remove it (rm ",
                       sink, ") and leashd creates the file"));
    }
    if (errno == ENXIO) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the decision log ", sink, " is a FIFO or socket, not a file. Remove it (rm ", sink,
          ") and leashd creates the file"));
    }
    return absl::ErrnoToStatus(errno, absl::StrCat("open the decision log ", sink));
  }
  struct stat st;
  if (fstat(file.fd, &st) != 0) return absl::ErrnoToStatus(errno, absl::StrCat("stat ", sink));
  if (!S_ISREG(st.st_mode) || st.st_uid != 0 || st.st_nlink != 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the decision log ", sink, " is ",
        !S_ISREG(st.st_mode) ? "not a regular file"
        : st.st_uid != 0     ? absl::StrCat("owned by uid ", st.st_uid, ", not root")
                             : absl::StrCat("a hard link (", st.st_nlink, " names)"),
        "; leashd appends only to a regular root-owned file of its own. Move it aside (mv ", sink,
        " ", sink, ".old) and leashd creates a new one"));
  }
  // A log another account may write is a log an agent can forge lines in.
  if ((st.st_mode & 0037) != 0 && fchmod(file.fd, st.st_mode & 0740) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("chmod 0640 ", sink));
  }
  const int flags = fcntl(file.fd, F_GETFL);
  if (flags < 0 || fcntl(file.fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("fcntl ", sink));
  }
  return file.release();
}

}  // namespace leash::controlplane
