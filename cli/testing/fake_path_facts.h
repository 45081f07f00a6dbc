// A file system in memory for suggest's path judgement (cli/suggest_path_check.h): names with
// owners and modes, links, and the ELF interpreter each program names. Every folder a name is
// added under is made root's (0755) unless it was added already.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cli/suggest_path_facts.h"

namespace leash::cli::testing {

class FakePathFacts : public PathFacts {
 public:
  FakePathFacts() { Put("/", Dir(0, 0755)); }

  static NodeFacts Dir(uint32_t uid, uint32_t mode) {
    return Node(NodeFacts::Type::kDirectory, uid, mode);
  }
  static NodeFacts File(uint32_t uid, uint32_t mode) {
    return Node(NodeFacts::Type::kFile, uid, mode);
  }

  // `path` with `facts`, and root's 0755 folders above it where none is yet.
  FakePathFacts& Put(const std::string& path, NodeFacts facts) {
    for (size_t slash = path.find('/', 1); slash != std::string::npos;
         slash = path.find('/', slash + 1)) {
      const std::string folder = path.substr(0, slash);
      if (!nodes_.count(folder)) nodes_[folder] = Identified(Dir(0, 0755));
    }
    nodes_[path] = Identified(facts);
    return *this;
  }
  FakePathFacts& RootProgram(const std::string& path) { return Put(path, File(0, 0755)); }
  FakePathFacts& Link(const std::string& path, const std::string& target, uint32_t uid = 0) {
    links_[path] = target;
    return Put(path, Node(NodeFacts::Type::kSymlink, uid, 0777));
  }
  FakePathFacts& Interpreter(const std::string& program, const std::string& interpreter) {
    interpreters_[program] = interpreter;
    return *this;
  }
  // A second name for the file at `existing` (a hard link): the same identity.
  FakePathFacts& HardLink(const std::string& path, const std::string& existing) {
    Put(path, nodes_.at(existing));
    return *this;
  }
  NodeFacts& At(const std::string& path) { return nodes_.at(path); }

  absl::StatusOr<NodeFacts> Lstat(const std::string& path) const override {
    auto it = nodes_.find(path);
    if (it == nodes_.end()) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    return it->second;
  }
  absl::StatusOr<std::string> ReadLink(const std::string& path) const override {
    auto it = links_.find(path);
    if (it == links_.end()) return absl::InvalidArgumentError(absl::StrCat(path, ": not a link"));
    return it->second;
  }
  absl::StatusOr<std::vector<std::string>> ListFolder(const std::string& folder) const override {
    if (!nodes_.count(folder)) return absl::NotFoundError(absl::StrCat(folder, ": no such file"));
    std::vector<std::string> names;
    const std::string prefix = folder == "/" ? "/" : absl::StrCat(folder, "/");
    for (const auto& [path, facts] : nodes_) {
      if (path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0 &&
          path.find('/', prefix.size()) == std::string::npos) {
        names.push_back(path);
      }
    }
    return names;
  }
  absl::StatusOr<std::string> ElfInterpreter(const std::string& path) const override {
    auto it = interpreters_.find(path);
    if (it != interpreters_.end()) return it->second;
    if (!nodes_.count(path)) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    return std::string();
  }

 private:
  static NodeFacts Node(NodeFacts::Type type, uint32_t uid, uint32_t mode) {
    NodeFacts facts;
    facts.type = type;
    facts.uid = uid;
    facts.gid = uid;
    facts.mode = mode;
    return facts;
  }
  NodeFacts Identified(NodeFacts facts) {
    if (facts.ino == 0) {
      facts.dev = 1;
      facts.ino = ++last_ino_;
    }
    return facts;
  }

  std::map<std::string, NodeFacts> nodes_;
  std::map<std::string, std::string> links_;
  std::map<std::string, std::string> interpreters_;
  uint64_t last_ino_ = 0;
};

}  // namespace leash::cli::testing
