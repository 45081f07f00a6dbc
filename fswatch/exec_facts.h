// What the watcher reads about an exec beyond its path, from the kernel, for the commands
// rules: whether only root could have made or changed the program (a name entry's condition),
// which ELF interpreter it names, and whether a process is the kernel loading that interpreter.
// Every call is for an exec event of a subject only, never per open, and allocates nothing.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace leash::fswatch {

// Whether the program open on `fd`, named `path` by the kernel, with owner `uid`, mode `mode`
// and identity (`dev`, `ino`), is root-controlled: RootOnlyWritable, not on FUSE, and a child
// right now of a folder that is engine::RootOnlyWritable, reached without following a symbolic link.
// The folder is opened O_PATH (no permission event) and its child compared to (`dev`, `ino`),
// so a folder renamed or swapped for a link after the kernel named the path cannot pass.
// Returns 0 (with `out`) or the errno of fstatfs on `fd`; anything else it cannot check is
// "not root-controlled".
int RootControlledProgram(int fd, absl::string_view path, uint32_t uid, uint32_t mode,
                          uint64_t dev, uint64_t ino, bool& out);

// The PT_INTERP of the ELF file open on `fd` (32- or 64-bit, either byte order), read with
// pread. `len` 0: not ELF, or no PT_INTERP. Returns 0, or an errno when reading failed.
int ReadElfInterpreter(int fd, char* buffer, size_t capacity, size_t& len);

// The identity (st_dev, st_ino) of the file the absolute `path` names from the caller's own
// root and mount namespace (the watcher's: the host's), following links as the kernel does for
// PT_INTERP. Never as an exec'ing process sees it: a chroot, a pivot_root or a mount namespace
// is the agent's to arrange, so a loader found there is the agent's choice. One O_PATH open,
// which raises no permission event. Returns 0 or an errno (EINVAL: `path` is not absolute).
int IdentityOnHost(const char* path, uint64_t& dev, uint64_t& ino);

// Whether process `pid` has exactly one thread and that thread's kernel stack
// (/proc/<pid>/stack, root only) shows the ELF loader. Returns 0 or an errno (ENOENT: a
// kernel without stack traces; ESRCH: the process is gone).
int LoadingElfInterpreter(pid_t pid, bool& out);

}  // namespace leash::fswatch
