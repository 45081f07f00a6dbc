// Where Leash's programs are: next to the running one (an install puts leashd and both sidecars
// in /usr/lib/leash), in a sibling package of a Bazel build (bazel-bin/controlplane/leashd,
// bazel-bin/proxy/leash-proxy), else /usr/lib/leash. leashd finds its sidecars this way and
// `leash` finds leashd.
#pragma once

#include <string>

namespace leash::controlplane {

inline constexpr char kInstalledProgramDir[] = "/usr/lib/leash";

// The directory of the running executable ("." if /proc/self/exe cannot be read).
std::string ExecutableDirectory();

// The first executable of: <dir of this program>/<name>, <dir>/../<bazel_package>/<name>,
// /usr/lib/leash/<name>. When none is executable, the installed path (so an error names where
// Leash expects it).
std::string FindLeashProgram(const std::string& name, const std::string& bazel_package);

}  // namespace leash::controlplane
