// Where Leash's programs are: next to the running one (an install puts leashd and both sidecars
// in /usr/lib/leash), in their own packages of the same Bazel build (bazel-bin/proxy/leash-proxy
// beside bazel-bin/controlplane/main/leashd), else /usr/lib/leash. leashd finds its sidecars
// this way and `leash` finds leashd.
#pragma once

#include <string>
#include <vector>

namespace leash::base {

inline constexpr char kInstalledProgramDir[] = "/usr/lib/leash";

// The directory of the running executable ("." if /proc/self/exe cannot be read).
std::string ExecutableDirectory();

// Where `name` may be, in order, for a program running from `self_dir` whose Bazel package is
// `own_package`: <self_dir>/<name>; when self_dir ends in /<own_package> (a Bazel build),
// <that build's output root>/<bazel_package>/<name>; /usr/lib/leash/<name>.
std::vector<std::string> LeashProgramCandidates(const std::string& self_dir,
                                                const std::string& name,
                                                const std::string& bazel_package,
                                                const std::string& own_package);

// The first executable of LeashProgramCandidates for the running program. When none is
// executable, the installed path (so an error names where Leash expects it).
std::string FindLeashProgram(const std::string& name, const std::string& bazel_package,
                             const std::string& own_package);

}  // namespace leash::base
