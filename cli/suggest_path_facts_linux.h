// The real PathFacts (cli/suggest_path_facts.h): lstat, readlink, statfs, the access ACL's
// extended attribute and the PT_INTERP of an opened program, as the caller's root and mount
// namespace see them (leash suggest runs on the host, as root).
#pragma once

#include "cli/suggest_path_facts.h"

namespace leash::cli {

class LinuxPathFacts : public PathFacts {
 public:
  absl::StatusOr<NodeFacts> Lstat(const std::string& path) const override;
  absl::StatusOr<std::string> ReadLink(const std::string& path) const override;
  absl::StatusOr<std::vector<std::string>> ListFolder(const std::string& folder) const override;
  absl::StatusOr<std::string> ElfInterpreter(const std::string& path) const override;
};

// Whether the POSIX access ACL `xattr` (the system.posix_acl_access value) lets a named user
// other than root, or a group named or owning, write once its mask is applied. False for a
// value too short or of another version: then only the mode bits speak, which the kernel
// keeps in step with the ACL (the group bits are its mask).
bool AclGrantsWrite(const std::string& xattr);

}  // namespace leash::cli
