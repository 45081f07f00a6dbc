#include "cli/suggest_inputs.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/read_file.h"
#include "engine/bindings_yaml.h"
#include "engine/config_yaml.h"

namespace leash::cli {
namespace {

absl::Status ErrnoStatus(int error, absl::string_view what, absl::string_view path) {
  return absl::ErrnoToStatus(error, absl::StrCat(what, " ", path));
}

// Streams `path`'s lines to `on_line` in large reads: the log can hold millions of lines.
absl::Status ReadLines(const std::string& path,
                       absl::FunctionRef<void(absl::string_view)> on_line) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "cannot open", path);
  constexpr size_t kChunk = 1 << 20;
  std::string buffer;
  size_t start = 0;  // the first byte of buffer not yet handed out
  std::vector<char> chunk(kChunk);
  while (true) {
    const ssize_t got = read(fd, chunk.data(), chunk.size());
    if (got < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      close(fd);
      return ErrnoStatus(error, "cannot read", path);
    }
    if (got == 0) break;
    buffer.erase(0, start);
    start = 0;
    buffer.append(chunk.data(), static_cast<size_t>(got));
    size_t newline;
    while ((newline = buffer.find('\n', start)) != std::string::npos) {
      on_line(absl::string_view(buffer).substr(start, newline - start));
      start = newline + 1;
    }
  }
  close(fd);
  // A last line without '\n' (a writer caught mid-line) is handed out as it is.
  if (start < buffer.size()) on_line(absl::string_view(buffer).substr(start));
  return absl::OkStatus();
}

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

}  // namespace

absl::StatusOr<std::vector<engine::UidRange>> AccountUids(const std::string& account,
                                                          const std::string& subuid_path) {
  passwd entry;
  passwd* found = nullptr;
  std::vector<char> buffer(16384);
  const int error = getpwnam_r(account.c_str(), &entry, buffer.data(), buffer.size(), &found);
  if (error != 0) return ErrnoStatus(error, "cannot look up account", account);
  if (found == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "no account named '", account,
        "' in passwd; --account takes the agent's Linux account name (e.g. leash-iris)"));
  }
  const uint32_t uid = found->pw_uid;
  std::vector<engine::UidRange> ranges = {{uid, uid}};
  absl::StatusOr<std::string> subuid = base::ReadFile(subuid_path);
  if (!subuid.ok() && !absl::IsNotFound(subuid.status())) return subuid.status();
  if (subuid.ok()) {
    // subuid(5): "owner:first:count", the owner a login name or a numeric UID.
    for (absl::string_view line : absl::StrSplit(*subuid, '\n')) {
      const std::vector<absl::string_view> fields = absl::StrSplit(line, ':');
      if (fields.size() != 3) continue;
      if (fields[0] != account && fields[0] != absl::StrCat(uid)) continue;
      uint32_t first = 0;
      uint32_t count = 0;
      if (!absl::SimpleAtoi(fields[1], &first) || !absl::SimpleAtoi(fields[2], &count) ||
          count == 0 || first > UINT32_MAX - (count - 1)) {
        continue;
      }
      ranges.push_back({first, first + (count - 1)});
    }
  }
  return engine::MergeUidRanges(std::move(ranges));
}

absl::StatusOr<std::vector<std::string>> ReadDecisionLog(
    const std::string& path, absl::FunctionRef<void(absl::string_view)> on_line) {
  std::vector<std::string> read;
  const std::string rotated = absl::StrCat(path, ".1");
  if (Exists(rotated)) {
    if (absl::Status status = ReadLines(rotated, on_line); !status.ok()) return status;
    read.push_back(rotated);
  }
  if (Exists(path)) {
    if (absl::Status status = ReadLines(path, on_line); !status.ok()) return status;
    read.push_back(path);
  }
  if (read.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "the decision log ", path,
        " does not exist; pass --log <path> (the floor's logging.decisions names it)"));
  }
  return read;
}

absl::StatusOr<HostPolicy> ReadHostPolicy(const std::string& config_path,
                                          const std::string& state_dir) {
  HostPolicy host;
  absl::StatusOr<std::string> floor_text = base::ReadFile(config_path);
  if (!floor_text.ok()) return floor_text.status();
  absl::StatusOr<leash::v1::Config> floor =
      engine::ParseConfigYaml(*floor_text, engine::ConfigKind::kFloor, config_path);
  if (!floor.ok()) return floor.status();
  host.floor = *std::move(floor);

  const std::string bindings_path = absl::StrCat(state_dir, "/bindings.yaml");
  absl::StatusOr<std::string> bindings_text = base::ReadFile(bindings_path);
  if (bindings_text.ok()) {
    absl::StatusOr<engine::Bindings> bindings =
        engine::ParseBindingsYaml(*bindings_text, bindings_path);
    if (!bindings.ok()) return bindings.status();
    host.bindings = *std::move(bindings);
  } else if (!absl::IsNotFound(bindings_text.status())) {
    return bindings_text.status();
  }

  const std::string profiles_dir = absl::StrCat(state_dir, "/profiles");
  DIR* dir = opendir(profiles_dir.c_str());
  if (dir == nullptr) {
    if (errno == ENOENT) return host;
    return ErrnoStatus(errno, "cannot list", profiles_dir);
  }
  std::vector<std::string> names;
  while (dirent* entry = readdir(dir)) {
    absl::string_view name = entry->d_name;
    // leashd's own temp files ("<name>.yaml.tmp-XXXXXX") end otherwise and are skipped.
    if (name.front() == '.' || !absl::ConsumeSuffix(&name, ".yaml")) continue;
    names.emplace_back(name);
  }
  closedir(dir);
  for (const std::string& name : names) {
    const std::string path = absl::StrCat(profiles_dir, "/", name, ".yaml");
    absl::StatusOr<std::string> text = base::ReadFile(path);
    if (absl::IsNotFound(text.status())) continue;  // deleted since the listing
    host.profiles.insert_or_assign(
        name, text.ok() ? engine::ParseConfigYaml(*text, engine::ConfigKind::kProfile, path)
                        : absl::StatusOr<leash::v1::Config>(text.status()));
  }
  return host;
}

}  // namespace leash::cli
