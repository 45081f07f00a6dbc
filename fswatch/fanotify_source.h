// The narrow kernel interface the watcher's event loop and marker stand on: read permission
// events, answer them, learn who raised one and which file it is about, and put marks on
// filesystems. fanotify_linux.h is the real one; testing/fake_fanotify_source.h is a stateful
// fake for unit tests of the logic above it.
//
// Per-event calls return 0 or an errno and never allocate, because the event loop calls them
// while every opener on a marked filesystem waits for it.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace leash::fswatch {

// One event as read from the group.
struct FanEvent {
  // FAN_OPEN_PERM, FAN_OPEN_EXEC_PERM or FAN_Q_OVERFLOW (see kind()).
  uint64_t mask = 0;
  // The event's file descriptor (FAN_NOFD on overflow). Owned until ReleaseAll().
  int fd = -1;
  // The acting process (thread-group id).
  pid_t pid = 0;
  // A pidfd for `pid` when the group reports them: >= 0; kNoPidfd when the group does not
  // report pidfds (or could not make one for a live process); kPidfdGone when the process had
  // already exited.
  int pidfd = -1;

  static constexpr int kNoPidfd = -1;
  static constexpr int kPidfdGone = -2;
  // Non-zero (an errno) for an event the kernel could not open the file of for the watcher
  // (a 0:0 device node, which any user may make; a write-only sysfs file; a stale NFS file).
  // The kernel has denied such an event itself and tells only the error: no fd, no pid.
  int open_error = 0;

  enum class Kind { kOpen, kExec, kOverflow, kUnopenable, kOther };
  Kind kind() const;
};

// The credentials that matter for attributing an event to a subject.
struct Creds {
  uint32_t ruid = 0;
  uint32_t euid = 0;
  uint32_t fsuid = 0;
  uint32_t rgid = 0;
};

// What the loop needs to know about the event's file beyond its path.
struct FileFacts {
  bool regular = false;
  uint32_t nlink = 1;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t mode = 0;
  // The file's identity (st_dev, st_ino), to tell whether a path names this very file.
  uint64_t dev = 0;
  uint64_t ino = 0;
  // Whether the file was opened through a mount of the watcher's own mount namespace. When it
  // was not (a bind mount made in an unshared namespace, an overlayfs layer), the path the
  // kernel reports is the one seen from that namespace, which the opener chose.
  enum class Mount { kOurs, kForeign, kUnknown };
  Mount mount = Mount::kUnknown;
};

// How the acting UID is learned. Said at start.
enum class IdentityMethod {
  // ioctl(PIDFD_GET_INFO) (kernel >= 6.13) on a pidfd the loop keeps per process
  // (PidfdCache): no /proc read, no PID-reuse race, no pidfd made per event.
  kPidfdCache,
  // /proc/<pid>/status, then the event's pidfd is checked to still name a live process, so the
  // PID read cannot have been recycled in between (kernels with FAN_REPORT_PIDFD, >= 5.15).
  kProcStatusPidfdChecked,
  // /proc/<pid>/status alone (rule F6's fallback): a PID recycled between the event and the read
  // is attributed to whoever holds it now.
  kProcStatus,
};

const char* IdentityMethodName(IdentityMethod method);

class FanotifySource {
 public:
  virtual ~FanotifySource() = default;

  // Reads what the group has, waiting when nothing is pending: up to `timeout_ms` where the
  // source can time out (the fake), or until a signal interrupts the wait (the real group is
  // read blocking, one syscall per wake-up like the bare kernel round trip; leash-fswatch
  // interrupts it every second so the loop makes a pass for the watchdog). Returns the number
  // of events put in `out` (0 on timeout or when interrupted), or -errno when the group itself
  // cannot be read. An event whose file the kernel could not open for the watcher is not a
  // failure to read: it comes back as one event of Kind::kUnopenable.
  virtual int ReadEvents(absl::Span<FanEvent> out, int timeout_ms) = 0;

  // Answers a permission event (FAN_ALLOW / FAN_DENY). Returns 0 or an errno.
  virtual int Respond(const FanEvent& event, bool allow) = 0;

  // Notes that `event` was raised by `uid`, so that a watcher taking over after this one dies
  // can answer it under that subject's fail_mode (the real group's pending table).
  virtual void NoteSubject(const FanEvent& event, uint32_t uid) {}

  // Closes the descriptors of every event of a batch, once all of them are answered (the real
  // group closes a run of consecutive numbers at a time). Once per batch, after Respond.
  virtual void ReleaseAll(absl::Span<const FanEvent> events) = 0;

  // The acting process's credentials, by the method in force. Returns 0 or an errno
  // (ESRCH: the process is gone).
  virtual int CredsOf(const FanEvent& event, Creds& out) = 0;

  // The path of the event's file as the watcher's mount namespace names it (the link
  // /proc/self/fd/N; may end in " (deleted)"). Writes it to `buffer` and its length to `len`.
  // Returns 0, or ENAMETOOLONG when it does not fit, or another errno.
  virtual int PathOf(const FanEvent& event, char* buffer, size_t capacity, size_t& len) = 0;

  // Facts about the event's file, from cached attributes (never a call into a filesystem's
  // server, so a FUSE daemon cannot stall the loop). Returns 0 or an errno.
  virtual int FactsOf(const FanEvent& event, FileFacts& out) = 0;

  // The content of the event's file, read through the event's own descriptor (the very file
  // the process opens, whatever is renamed over its name meanwhile), from offset 0, at most
  // `limit` bytes. Asked only for a subject's open of /etc/subuid or /etc/subgid (subid_hold.h).
  // Returns 0, EFBIG when the file holds more than `limit`, or another errno.
  virtual int ContentOf(const FanEvent& event, size_t limit, std::string& out) = 0;

  // Exec events only (never asked per open):
  //
  // Whether the event's program (at `path`, with `facts` from FactsOf) is one only root could
  // have made or changed: owned by root and writable by nobody else, on a filesystem whose
  // owners are the kernel's (not FUSE's, whose server makes them up), and a child, at this
  // moment, of a folder owned by root that nobody else may write (found without following a
  // symbolic link, and checked to hold this very file). Anything that cannot be checked is
  // "no". Returns 0 or an errno.
  virtual int IsRootControlled(const FanEvent& event, absl::string_view path,
                               const FileFacts& facts, bool& out) = 0;
  // The ELF interpreter (PT_INTERP) the event's program names, read from the event's
  // descriptor: written to `buffer` (not terminated) and its length to `len`; len 0 when the
  // file is not an ELF program with one (a static program, a script, the loader itself).
  // Returns 0 or an errno.
  virtual int ElfInterpreterOf(const FanEvent& event, char* buffer, size_t capacity,
                               size_t& len) = 0;
  // The identity (st_dev, st_ino) of the file the absolute `path` names from the watcher's
  // own root (the host's), following links; never as an event's process sees it, whose root
  // and mounts are its own to arrange. Returns 0 or an errno.
  virtual int HostIdentityOf(const char* path, uint64_t& dev, uint64_t& ino) = 0;
  // Whether the event's process is, right now, the kernel loading an ELF program's
  // interpreter: it has a single thread (so the thread in this exec is the one the event
  // names) and that thread's kernel stack is in the ELF loader (load_elf_binary), not in a
  // program's own open. Returns 0, or an errno (ENOENT: the kernel cannot show a stack).
  virtual int IsLoadingElfInterpreter(const FanEvent& event, bool& out) = 0;

  virtual IdentityMethod identity_method() const = 0;

  // Marks the filesystem that holds `path` (FAN_MARK_FILESYSTEM) for open and exec permission
  // events, or removes that mark. Not called by the event loop.
  virtual absl::Status MarkFilesystem(const std::string& path) = 0;
  virtual absl::Status UnmarkFilesystem(const std::string& path) = 0;
};

}  // namespace leash::fswatch
