#include "proto/host/list_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace leash::host {
namespace {

constexpr off_t kMaxListBytes = 1 << 20;

// Owned by root and writable by nobody else: a file the subject (or anyone but root) could
// change would let it widen its own policy.
absl::Status CheckTrusted(const struct stat& st, const std::string& path,
                          absl::string_view what = "") {
  if (st.st_uid != 0) {
    return absl::PermissionDeniedError(absl::StrCat(what, path, " is owned by uid ", st.st_uid,
                                                    ", not root (chown root ", path, ")"));
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    return absl::PermissionDeniedError(absl::StrCat(
        what, path, " is writable by its group or by anyone (chmod go-w ", path, ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadList(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT) {
      return absl::NotFoundError(absl::StrCat(
          path, " does not exist (the package ships system, package-registries and github; "
                "reinstall to restore them, or write the list there)"));
    }
    if (error == ELOOP) return absl::PermissionDeniedError(absl::StrCat(path, " is a symlink"));
    return absl::ErrnoToStatus(error, absl::StrCat("cannot open ", path));
  }
  struct stat st;
  std::string text;
  absl::Status status = absl::OkStatus();
  if (fstat(fd, &st) != 0) {
    status = absl::ErrnoToStatus(errno, absl::StrCat("cannot stat ", path));
  } else if (!S_ISREG(st.st_mode)) {
    status = absl::FailedPreconditionError(absl::StrCat(path, " is not a regular file"));
  } else if (st.st_size > kMaxListBytes) {
    status = absl::FailedPreconditionError(
        absl::StrCat(path, " is larger than ", kMaxListBytes, " bytes"));
  } else {
    status = CheckTrusted(st, path);
  }
  if (status.ok()) {
    char buffer[8192];
    for (;;) {
      const ssize_t n = read(fd, buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        status = absl::ErrnoToStatus(errno, absl::StrCat("cannot read ", path));
        break;
      }
      if (n == 0) break;
      text.append(buffer, static_cast<size_t>(n));
      if (text.size() > static_cast<size_t>(kMaxListBytes)) {
        status = absl::FailedPreconditionError(absl::StrCat(path, " grew while it was read"));
        break;
      }
    }
  }
  close(fd);
  if (!status.ok()) return status;
  return text;
}

}  // namespace

std::string ListFolderFor(const std::string& config_path) {
  const size_t slash = config_path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : config_path.substr(0, slash);
  return absl::StrCat(dir.empty() ? "" : dir, "/lists");
}

engine::ListTexts ReadListFiles(const std::vector<const leash::v1::Config*>& configs,
                                const std::string& folder) {
  engine::ListTexts texts;
  std::set<std::string> wanted;
  for (const leash::v1::Config* config : configs) {
    for (std::string& file : engine::ListFilesUsed(*config)) wanted.insert(std::move(file));
  }
  if (wanted.empty()) return texts;
  struct stat folder_stat;
  absl::Status folder_ok = absl::OkStatus();
  if (lstat(folder.c_str(), &folder_stat) != 0) {
    folder_ok = absl::ErrnoToStatus(errno, absl::StrCat("cannot stat the list folder ", folder));
  } else if (!S_ISDIR(folder_stat.st_mode)) {
    folder_ok = absl::FailedPreconditionError(
        absl::StrCat("the list folder ", folder, " is not a directory (or is a symlink)"));
  } else {
    folder_ok = CheckTrusted(folder_stat, folder, "the list folder ");
  }
  const std::string canonical_folder = absl::StrCat(engine::kListFolder, "/");
  for (const std::string& file : wanted) {
    if (!folder_ok.ok()) {
      texts[file] = folder_ok;
      continue;
    }
    absl::string_view name = file;
    absl::ConsumePrefix(&name, canonical_folder);
    texts[file] = ReadList(absl::StrCat(folder, "/", name));
  }
  return texts;
}

ListEntries EntriesOfLists(const engine::ListTexts& texts) {
  ListEntries out;
  for (const auto& [file, text] : texts) {
    if (!text.ok()) continue;
    absl::StatusOr<std::vector<engine::ListLine>> lines = engine::ParseListText(*text);
    if (!lines.ok()) continue;
    std::vector<std::string>& entries = out[file];
    for (engine::ListLine& line : *lines) entries.push_back(std::move(line.entry));
    std::sort(entries.begin(), entries.end());
    entries.erase(std::unique(entries.begin(), entries.end()), entries.end());
  }
  return out;
}

std::vector<std::string> DescribeListEdits(const ListEntries& before, const ListEntries& after) {
  std::vector<std::string> out;
  for (const auto& [file, now] : after) {
    auto it = before.find(file);
    if (it == before.end()) continue;
    std::vector<std::string> gained, lost;
    std::set_difference(now.begin(), now.end(), it->second.begin(), it->second.end(),
                        std::back_inserter(gained));
    std::set_difference(it->second.begin(), it->second.end(), now.begin(), now.end(),
                        std::back_inserter(lost));
    if (gained.empty() && lost.empty()) continue;
    auto quoted = [](const std::vector<std::string>& entries) {
      return absl::StrCat("'", absl::StrJoin(entries, "', '"), "'");
    };
    std::string line = absl::StrCat("list ", file, " was edited:");
    if (!gained.empty()) absl::StrAppend(&line, " gained ", quoted(gained), ";");
    if (!lost.empty()) absl::StrAppend(&line, " lost ", quoted(lost), ";");
    absl::StrAppend(&line,
                    " an entry gained in an allow list or lost from a deny list widens every "
                    "subject that uses the list (no consent is asked: the list is root's file, "
                    "like leash.yaml)");
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace leash::host
