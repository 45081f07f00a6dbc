// Fuzz target: the PT_INTERP reader on arbitrary bytes, as an agent's own program gives them
// (the watcher preads every allowed program the agent may have written).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

#include "fswatch/exec_facts.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const int fd = memfd_create("elf", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) {
    return 0;
  }
  char buffer[256];
  size_t len = 0;
  (void)leash::fswatch::ReadElfInterpreter(fd, buffer, sizeof(buffer), len);
  if (len > sizeof(buffer)) __builtin_trap();
  return 0;
}
