#include "proto/host/exec_routes.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"

namespace leash::host {
namespace {

std::optional<long> ReadSetting(const std::string& root, const std::string& sysctl) {
  std::string relative = sysctl;
  std::replace(relative.begin(), relative.end(), '.', '/');
  std::ifstream in(absl::StrCat(root, "/proc/sys/", relative));
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  long value = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text.str()), &value)) return std::nullopt;
  return value;
}

std::string Shown(const std::string& sysctl, const std::optional<long>& value) {
  return value ? absl::StrCat(sysctl, " = ", *value) : absl::StrCat(sysctl, " absent");
}

leash::v1::ExecRoute MemfdRoute(const std::string& root) {
  leash::v1::ExecRoute route;
  route.set_name("memfd exec");
  route.set_risk(
      "a program written into a memfd (memfd_create) and run with execveat/fexecve lives on "
      "the kernel's internal shmem mount, which fanotify cannot mark: no exec or open event, so "
      "any program the agent can write runs unjudged");
  const std::optional<long> value = ReadSetting(root, "vm.memfd_noexec");
  route.set_state(Shown("vm.memfd_noexec", value));
  if (!value) {
    route.set_open(true);
    route.set_state("vm.memfd_noexec absent (Linux < 6.3)");
    return route;  // no switch on this kernel
  }
  route.set_open(*value < 2);
  route.set_closed_by(
      "vm.memfd_noexec = 2 (sysctl -w, and a file in /etc/sysctl.d/ so it holds after a reboot; "
      "it is per PID namespace and inherited, so set it before agents start)");
  route.set_breaks(
      "every memfd_create() without MFD_NOEXEC_SEAL fails, and no memfd can be executed: "
      "runc and other container runtimes that re-exec themselves from a memfd, some JITs and "
      "language runtimes, self-extracting or in-memory program loaders");
  return route;
}

leash::v1::ExecRoute UserNamespaceRoute(const std::string& root) {
  leash::v1::ExecRoute route;
  route.set_name("user namespaces");
  route.set_risk(
      "an unprivileged account can make its own user and mount namespace (unshare -rm) and "
      "mount a new tmpfs (or a FUSE filesystem) there; the watcher never marks a filesystem "
      "made inside another namespace, so programs run from it raise no event");
  const std::optional<long> clone = ReadSetting(root, "kernel.unprivileged_userns_clone");
  const std::optional<long> max = ReadSetting(root, "user.max_user_namespaces");
  const std::optional<long> apparmor =
      ReadSetting(root, "kernel.apparmor_restrict_unprivileged_userns");
  std::string state = Shown("user.max_user_namespaces", max);
  if (clone) absl::StrAppend(&state, ", ", Shown("kernel.unprivileged_userns_clone", clone));
  if (apparmor) {
    absl::StrAppend(&state, ", ", Shown("kernel.apparmor_restrict_unprivileged_userns", apparmor));
  }
  route.set_state(state);
  const bool closed = (clone && *clone == 0) || (max && *max == 0) || (apparmor && *apparmor == 1);
  route.set_open(!closed);
  if (clone) {
    route.set_closed_by("kernel.unprivileged_userns_clone = 0");
    route.set_breaks(
        "unprivileged user namespaces for every account: rootless containers (podman, "
        "buildah), bubblewrap and flatpak sandboxes, the Chromium/Electron sandbox, unshare -r; "
        "and an agent's subordinate UID ranges become unusable");
  } else {
    route.set_closed_by("user.max_user_namespaces = 0");
    route.set_breaks(
        "every new user namespace, root's included: rootless containers (podman, buildah), "
        "bubblewrap and flatpak sandboxes, the Chromium/Electron sandbox, unshare -r, systemd "
        "units with PrivateUsers=; and an agent's subordinate UID ranges become unusable");
  }
  return route;
}

leash::v1::ExecRoute FuseRoute(const std::string& root) {
  leash::v1::ExecRoute route;
  route.set_name("FUSE");
  route.set_risk(
      "an account that may open /dev/fuse can serve a filesystem of its own: mounted inside its "
      "own namespace it is never marked (no event); mounted with fusermount on the host, its "
      "server makes up every file's owner and mode");
  struct stat st;
  const std::string path = absl::StrCat(root, "/dev/fuse");
  if (stat(path.c_str(), &st) != 0) {
    route.set_state("/dev/fuse absent");
    route.set_open(false);
    return route;
  }
  route.set_state(absl::StrFormat("/dev/fuse mode %04o", st.st_mode & 07777));
  route.set_open((st.st_mode & 0006) != 0);
  route.set_closed_by(
      "/dev/fuse mode 0600 (a udev rule, e.g. KERNEL==\"fuse\", MODE=\"0600\" in "
      "/etc/udev/rules.d/, then chmod 0600 /dev/fuse)");
  route.set_breaks(
      "FUSE mounts by ordinary accounts: sshfs, rclone mount, AppImages, gvfs, the flatpak "
      "document portal");
  return route;
}

}  // namespace

std::vector<leash::v1::ExecRoute> ReadExecRoutes(const std::string& root) {
  return {MemfdRoute(root), UserNamespaceRoute(root), FuseRoute(root)};
}

std::string DescribeExecRoute(const leash::v1::ExecRoute& route) {
  std::string out = absl::StrCat(route.open() ? "open" : "closed", ": ", route.name(), " (",
                                 route.state(), ")");
  if (!route.open()) return out;
  absl::StrAppend(&out, ": ", route.risk(), "; ");
  if (route.closed_by().empty()) {
    out += "this kernel offers no setting that closes it";
  } else {
    absl::StrAppend(&out, "closed by ", route.closed_by(), ", which breaks ", route.breaks());
  }
  return out;
}

std::vector<leash::v1::Finding> ExecRouteFindings(
    const std::vector<leash::v1::ExecRoute>& routes) {
  std::vector<leash::v1::Finding> out;
  for (const leash::v1::ExecRoute& route : routes) {
    if (!route.open()) continue;
    leash::v1::Finding finding;
    finding.set_severity(leash::v1::SEVERITY_WARNING);
    finding.set_source("host");
    finding.set_field("commands");
    finding.set_entry(route.closed_by());
    finding.set_message(absl::StrCat("a route to running programs unseen is ",
                                     DescribeExecRoute(route)));
    out.push_back(std::move(finding));
  }
  return out;
}

}  // namespace leash::host
