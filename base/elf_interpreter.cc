#include "base/elf_interpreter.h"

#include <elf.h>
#include <endian.h>
#include <linux/limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace leash::base {
namespace {

bool ReadAll(int fd, void* out, size_t size, uint64_t offset) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n =
        pread(fd, static_cast<char*>(out) + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

template <typename T>
T Swapped(T value, bool swap) {
  if (!swap) return value;
  T out;
  const auto* in = reinterpret_cast<const unsigned char*>(&value);
  auto* o = reinterpret_cast<unsigned char*>(&out);
  for (size_t i = 0; i < sizeof(T); ++i) o[i] = in[sizeof(T) - 1 - i];
  return out;
}

// Finds PT_INTERP among the program headers of an ELF file of one class.
template <typename Ehdr, typename Phdr>
int FindInterpreter(int fd, const unsigned char* ident, char* buffer, size_t capacity,
                    size_t& len) {
  const bool swap = (ident[EI_DATA] == ELFDATA2MSB) != (__BYTE_ORDER == __BIG_ENDIAN);
  Ehdr header;
  if (!ReadAll(fd, &header, sizeof(header), 0)) return 0;  // too short to be a program
  const uint64_t phoff = Swapped(header.e_phoff, swap);
  const uint16_t phnum = Swapped(header.e_phnum, swap);
  if (Swapped(header.e_phentsize, swap) != sizeof(Phdr)) return 0;
  // The kernel refuses more than 64 KiB of program headers; so does this, in steps that fit
  // on the stack.
  if (phnum == 0 || static_cast<uint64_t>(phnum) * sizeof(Phdr) > 65536) return 0;
  Phdr headers[32];
  for (uint16_t first = 0; first < phnum; first += 32) {
    const uint16_t count = phnum - first < 32 ? phnum - first : 32;
    if (!ReadAll(fd, headers, count * sizeof(Phdr), phoff + first * sizeof(Phdr))) return 0;
    for (uint16_t i = 0; i < count; ++i) {
      if (Swapped(headers[i].p_type, swap) != PT_INTERP) continue;
      const uint64_t size = Swapped(headers[i].p_filesz, swap);
      // The kernel's own bounds: at least 2 bytes, at most PATH_MAX, NUL-terminated.
      if (size < 2 || size > PATH_MAX || size > capacity) return 0;
      if (!ReadAll(fd, buffer, size, Swapped(headers[i].p_offset, swap))) return EIO;
      if (buffer[size - 1] != '\0') return 0;
      len = strnlen(buffer, size);
      return 0;
    }
  }
  return 0;
}

}  // namespace

int ReadElfInterpreter(int fd, char* buffer, size_t capacity, size_t& len) {
  len = 0;
  unsigned char ident[EI_NIDENT];
  if (!ReadAll(fd, ident, sizeof(ident), 0)) return 0;
  if (memcmp(ident, ELFMAG, SELFMAG) != 0) return 0;
  if (ident[EI_DATA] != ELFDATA2LSB && ident[EI_DATA] != ELFDATA2MSB) return 0;
  if (ident[EI_CLASS] == ELFCLASS64) {
    return FindInterpreter<Elf64_Ehdr, Elf64_Phdr>(fd, ident, buffer, capacity, len);
  }
  if (ident[EI_CLASS] == ELFCLASS32) {
    return FindInterpreter<Elf32_Ehdr, Elf32_Phdr>(fd, ident, buffer, capacity, len);
  }
  return 0;
}

}  // namespace leash::base
