// The ELF interpreter (PT_INTERP) an ELF file names, read from an open descriptor with pread:
// what the kernel loads to run a dynamically linked program. Shared by the fanotify watcher
// (every exec it allows) and `leash suggest` (a program it must not suggest as a command).
#pragma once

#include <cstddef>

namespace leash::base {

// The PT_INTERP of the ELF file open on `fd` (32- or 64-bit, either byte order), read with
// pread, into `buffer` (`len` bytes, not counting the NUL the file holds). `len` 0: not ELF,
// or no PT_INTERP, or one the kernel would refuse. Returns 0, or an errno when reading failed.
// Allocates nothing.
int ReadElfInterpreter(int fd, char* buffer, size_t capacity, size_t& len);

}  // namespace leash::base
