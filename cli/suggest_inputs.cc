#include "cli/suggest_inputs.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "base/read_file.h"
#include "base/rotated_log.h"
#include "cli/suggest_log_line.h"
#include "engine/bindings_yaml.h"
#include "engine/config_yaml.h"

namespace leash::cli {
namespace {

absl::Status ErrnoStatus(int error, absl::string_view what, absl::string_view path) {
  return absl::ErrnoToStatus(error, absl::StrCat(what, " ", path));
}

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
    const std::string& path, absl::Time since,
    absl::FunctionRef<void(absl::string_view)> on_line) {
  const std::vector<base::LogFile> files = base::LogRotations(path);
  if (files.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "the decision log ", path,
        " does not exist; pass --log <path> (the floor's logging.decisions names it)"));
  }
  const size_t from =
      since == absl::InfinitePast()
          ? 0
          : base::FirstFileReaching(files, since, [](absl::string_view line) {
              absl::Time ts;
              std::string error;
              const absl::string_view text = PeekTs(line);
              if (text.empty() ||
                  !absl::ParseTime(absl::RFC3339_full, std::string(text), &ts, &error)) {
                return std::optional<absl::Time>();
              }
              return std::optional<absl::Time>(ts);
            });
  std::vector<std::string> read;
  for (size_t i = from; i < files.size(); ++i) {
    absl::Status status = base::ReadLogLines(files[i], [&](absl::string_view line) {
      on_line(line);
      return true;
    });
    if (!status.ok()) return status;
    read.push_back(files[i].path);
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
