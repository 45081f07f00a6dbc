#include "cli/render.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "proto/host/exec_routes.h"
#include "engine/config_yaml.h"
#include "engine/config_defaults.h"
#include "engine/validate.h"

namespace leash::cli {
namespace {

std::string Provenance(const std::string& evaluated_by, const std::string& config_path) {
  if (evaluated_by == "offline") {
    return absl::StrCat("(offline: judged ", config_path, " directly; leashd was not asked)\n");
  }
  return "";
}

}  // namespace

std::string RenderValidate(const leash::v1::ValidateResponse& response,
                           const std::string& config_path) {
  std::string out;
  if (response.findings().empty()) {
    absl::StrAppend(&out, config_path, ": valid, no findings\n");
  } else {
    absl::StrAppend(&out, config_path, ": ", response.findings_size(),
                    response.findings_size() == 1 ? " finding\n" : " findings\n");
  }
  int blocking = 0;
  for (const leash::v1::Finding& finding : response.findings()) {
    const bool blocks = finding.severity() == leash::v1::SEVERITY_ERROR ||
                        finding.severity() == leash::v1::SEVERITY_CRITICAL;
    blocking += blocks;
    absl::StrAppend(&out, absl::StrFormat("  %-8s %s%s: %s\n",
                                          engine::SeverityName(finding.severity()),
                                          finding.source() == "floor" || finding.source().empty()
                                              ? ""
                                              : finding.source() + " ",
                                          finding.field(), finding.message()));
  }
  if (blocking > 0) {
    absl::StrAppend(&out, "invalid: ", blocking, blocking == 1 ? " finding is" : " findings are",
                    " an error or critical\n");
  }
  absl::StrAppend(&out, Provenance(response.evaluated_by(), config_path));
  return out;
}

std::string RenderCheck(const leash::v1::CheckResponse& response,
                        const std::string& config_path) {
  const bool allowed = response.decision().action() == leash::v1::ACTION_ALLOW;
  return absl::StrCat(allowed ? "allow" : "block", "  ", response.decision().reason(),
                      response.account().empty() ? "" : absl::StrCat("  [", response.account(), "]"),
                      "\n",
                      response.resolved().empty() ? "" : absl::StrCat("  (", response.resolved(), ")\n"),
                      Provenance(response.evaluated_by(), config_path));
}

namespace {

// A subject's network counters, on a line of their own under it: what its chain dropped (or,
// under network.inbound: allow, let through) since the chain was last applied. Empty for a
// subject with no chain.
std::string RenderCounters(const leash::v1::SubjectStatus& subject) {
  if (!subject.counters_error().empty()) {
    return absl::StrCat("    counters: cannot be read: ", subject.counters_error(), "\n");
  }
  if (!subject.has_counters()) return "";
  const leash::v1::NetworkCounters& c = subject.counters();
  const bool allowed = subject.policy().network().inbound() == leash::v1::INBOUND_MODE_ALLOW;
  return absl::StrCat(
      "    inbound (", allowed ? "allow" : "drop", "): ", c.inbound_dropped_packets(),
      " packets dropped", allowed ? absl::StrCat(", ", c.inbound_allowed_packets(), " served")
                                  : std::string(),
      "; tcp escaping the proxy: ", c.unproxied_dropped_packets(),
      " packets dropped; loopback dns refused: ", c.loopback_dns_refused_packets(),
      " packets (since the chain was applied)\n");
}

// The host's loopback resolvers as leashd found them (rule N15 of docs/ARCHITECTURE.md): the
// local servers an agent's DNS might try around its filter. Nothing for an offline answer,
// which has not asked leashd.
std::string RenderLoopbackResolvers(const leash::v1::StatusResponse& response) {
  if (response.offline()) return "";
  if (!response.loopback_resolvers_error().empty()) {
    return absl::StrCat("loopback resolvers: cannot be read: ", response.loopback_resolvers_error(),
                        "\n");
  }
  if (response.loopback_resolvers().empty()) return "loopback resolvers: none found\n";
  std::vector<std::string> found;
  for (const leash::v1::LoopbackResolver& r : response.loopback_resolvers()) {
    std::vector<std::string> where;
    if (r.in_resolv_conf()) where.push_back("resolv.conf");
    if (r.address() == "0.0.0.0" || r.address() == "::") where.push_back("every address");
    std::vector<std::string> listening;
    if (r.udp()) listening.push_back("udp");
    if (r.tcp()) listening.push_back("tcp");
    if (listening.empty()) listening.push_back("nothing listening");
    std::string detail = absl::StrJoin(where, ", ");
    absl::StrAppend(&detail, detail.empty() ? "" : "; ", absl::StrJoin(listening, ", "));
    found.push_back(absl::StrCat(r.address(), " (", detail, ")"));
  }
  return absl::StrCat("loopback resolvers: ", absl::StrJoin(found, ", "),
                      "\n  (an agent's DNS to any of them goes to its filter, or is refused: "
                      "rule N15)\n");
}

// The surfaces of `policy` in audit, in capitals ("NETWORK, TOOLS"): a surface that blocks
// nothing must not read like one that does. Empty when none is.
std::string AuditedSurfaces(const leash::v1::Config& policy) {
  std::vector<std::string> out;
  if (policy.network().audit()) out.push_back("NETWORK");
  if (policy.filesystem().audit()) out.push_back("FILESYSTEM");
  if (policy.commands().audit()) out.push_back("COMMANDS");
  if (policy.tools().audit()) out.push_back("TOOLS");
  return absl::StrJoin(out, ", ");
}

std::string WouldBeBlocks(uint64_t count) {
  return absl::StrCat(count, count == 1 ? " would-be block" : " would-be blocks");
}

// A subject's audit lines: its audited surfaces in capitals, each with the blocks it let
// through ("NETWORK (12 would-be blocks)"), then the surfaces no longer in audit that let some
// through earlier. Empty when the subject audits nothing and let nothing through.
std::string RenderSubjectAudit(const leash::v1::SubjectStatus& subject) {
  const leash::v1::Config& policy = subject.policy();
  const leash::v1::WouldBeBlockCounts& counts = subject.would_be_blocks();
  struct Surface {
    const char* name;
    const char* capitals;
    bool audited;
    uint64_t count;
  };
  const Surface surfaces[] = {
      {"network", "NETWORK", policy.network().audit(), counts.network()},
      {"filesystem", "FILESYSTEM", policy.filesystem().audit(), counts.filesystem()},
      {"commands", "COMMANDS", policy.commands().audit(), counts.commands()},
      {"tools", "TOOLS", policy.tools().audit(), counts.tools()},
  };
  std::vector<std::string> audited, earlier;
  for (const Surface& s : surfaces) {
    if (s.audited) {
      audited.push_back(absl::StrCat(s.capitals, " (", WouldBeBlocks(s.count), ")"));
    } else if (s.count > 0) {
      earlier.push_back(absl::StrCat(s.name, " ", s.count));
    }
  }
  std::string out;
  if (!audited.empty()) {
    absl::StrAppend(&out, "    AUDIT (blocks logged with enforced: false, not made): ",
                    absl::StrJoin(audited, ", "), " since leashd started\n");
  }
  if (!earlier.empty()) {
    absl::StrAppend(&out, "    would-be blocks while in audit earlier, since leashd started: ",
                    absl::StrJoin(earlier, ", "), "\n");
  }
  return out;
}

// What leashd has in force: its subjects, its sidecars and its last reconcile.
std::string RenderSubjectsAndSidecars(const leash::v1::StatusResponse& response) {
  std::string out;
  if (!response.subjects().empty()) {
    absl::StrAppend(&out, "subjects (", response.subjects_size(),
                    response.single_subject() ? ", single-subject host" : "", ", map version ",
                    response.map_version(), "):\n");
    for (const leash::v1::SubjectStatus& subject : response.subjects()) {
      absl::StrAppend(&out, absl::StrFormat("  %-16s uid %-6u port %-5u %-14s", subject.account(),
                                            subject.uid(), subject.port(), subject.state()));
      if (!subject.profiles().empty()) {
        absl::StrAppend(&out, " from ", absl::StrJoin(subject.profiles(), ", "));
      }
      if (!subject.detail().empty()) absl::StrAppend(&out, " (", subject.detail(), ")");
      absl::StrAppend(&out, "\n");
      absl::StrAppend(&out, RenderSubjectAudit(subject), RenderCounters(subject));
      // The host UIDs a process of the subject can run under inside a user namespace it makes:
      // confined as this subject too.
      auto ranges = [](const auto& list) {
        return absl::StrJoin(list, ", ", [](std::string* o, const leash::v1::IdRange& r) {
          absl::StrAppend(o, r.first() == r.last() ? absl::StrCat(r.first())
                                                   : absl::StrCat(r.first(), "-", r.last()));
        });
      };
      if (!subject.subordinate_uids().empty() || !subject.subordinate_gids().empty()) {
        absl::StrAppend(&out, "    subordinate uids ",
                        subject.subordinate_uids().empty() ? "none" : ranges(subject.subordinate_uids()),
                        "; gids ",
                        subject.subordinate_gids().empty() ? "none" : ranges(subject.subordinate_gids()),
                        "\n");
      }
    }
  }
  if (!response.sidecars().empty()) {
    absl::StrAppend(&out, "sidecars:\n");
    for (const leash::v1::SidecarStatus& sidecar : response.sidecars()) {
      absl::StrAppend(&out, absl::StrFormat("  %-14s %-8s pid %-7u acked map %-5u restarts %u\n",
                                            sidecar.name(),
                                            sidecar.running() ? "running" : "DOWN", sidecar.pid(),
                                            sidecar.acked_version(), sidecar.restarts()));
    }
  }
  if (response.has_last_reconcile()) {
    const leash::v1::ReconcileReport& last = response.last_reconcile();
    absl::StrAppend(&out, "reconcile passes: ", response.reconcile_passes(), "; last: ",
                    last.error().empty()
                        ? absl::StrCat(last.changes_size(), " changed, ", last.unchanged(),
                                       " unchanged, ", last.warnings_size(), " warnings")
                        : absl::StrCat("FAILED, nothing changed: ", last.error()),
                    "\n");
    if (!last.exec_routes().empty()) {
      out += "routes to running a program that raise no fanotify event (no rule sees them):\n";
      for (const leash::v1::ExecRoute& route : last.exec_routes()) {
        absl::StrAppend(&out, "  ", host::DescribeExecRoute(route), "\n");
      }
    }
  }
  return out;
}

}  // namespace

std::string RenderStatus(const leash::v1::StatusResponse& response) {
  const leash::v1::Config& floor = response.floor();
  if (!response.floor_error().empty()) {
    // An empty floor would render as "unspecified" modes and every enforcer OFF: not what runs.
    std::string out = absl::StrCat(
        "config: ", response.config_path(), "\nfloor: CANNOT BE READ: ", response.floor_error(),
        "\n  What is enforced is what the last reconcile that read it put in force (the subjects "
        "below); fix the file, then run: sudo leash reconcile\n");
    if (!response.netfilter().empty()) {
      absl::StrAppend(&out, "network enforcement: ", response.netfilter(), "\n");
    }
    return out + RenderLoopbackResolvers(response) + RenderSubjectsAndSidecars(response);
  }
  std::string out = absl::StrCat("user: ", response.user());
  if (response.uid() != 0 || response.user() == "root") absl::StrAppend(&out, " (uid ", response.uid(), ")");
  absl::StrAppend(&out, "\nconfig: ", response.config_path(), "\nfail_mode: ", floor.fail_mode(),
                  "\n", absl::StrFormat("%-11s %-10s %6s %6s\n", "surface", "mode", "allow", "deny"));
  auto row = [&out](const char* name, leash::v1::Mode mode, int allow, int deny,
                    const std::string& extra) {
    absl::StrAppend(&out, absl::StrFormat("%-11s %-10s %6d %6d", name,
                                          std::string(engine::ModeName(mode)), allow, deny),
                    extra.empty() ? "" : "  " + extra, "\n");
  };
  row("network", floor.network().mode(), floor.network().allow().entries_size(),
      floor.network().deny().entries_size(),
      absl::StrCat("udp: ", engine::UdpModeName(floor.network().udp()),
                   "  inbound: ", engine::InboundModeName(floor.network().inbound()),
                   "  dns: ", engine::DnsModeName(floor.network().dns())));
  row("filesystem", floor.filesystem().mode(), floor.filesystem().allow().entries_size(),
      floor.filesystem().deny().entries_size(), "");
  row("commands", floor.commands().mode(), floor.commands().allow().entries_size(),
      floor.commands().deny().entries_size(), "");
  std::vector<std::string> inspect;
  for (absl::string_view category : engine::kInspectCategories) {
    auto it = floor.tools().inspect().find(std::string(category));
    if (it != floor.tools().inspect().end()) {
      inspect.push_back(absl::StrCat(category, "=", engine::InspectActionName(it->second)));
    }
  }
  row("tools", floor.tools().mode(), floor.tools().allow().entries_size(),
      floor.tools().deny().entries_size(), absl::StrCat("inspect: ", absl::StrJoin(inspect, " ")));
  if (const std::string audited = AuditedSurfaces(floor); !audited.empty()) {
    absl::StrAppend(&out, "AUDIT (blocks logged with enforced: false, not made): ", audited,
                    "\n");
  }
  const leash::v1::Enforcers& e = floor.enforcers();
  absl::StrAppend(&out, "enforcers: network ", e.network() ? "on" : "OFF", ", filesystem ",
                  e.filesystem() ? "on" : "OFF", ", tools ", e.tools() ? "on" : "OFF", "\n");
  absl::StrAppend(&out, "decision log: ", floor.logging().decisions(), "\n");
  if (!response.netfilter().empty()) absl::StrAppend(&out, "network enforcement: ", response.netfilter(), "\n");
  return out + RenderLoopbackResolvers(response) + RenderSubjectsAndSidecars(response);
}

std::string RenderBindings(const leash::v1::ListBindingsResponse& response) {
  if (response.bindings().empty()) return "no bindings: every subject resolves to the floor\n";
  std::string out;
  for (const auto& binding : response.bindings()) {
    absl::StrAppend(&out, binding.scope(), " -> ", binding.profile());
    if (!binding.acks().empty()) absl::StrAppend(&out, "  acks: ", absl::StrJoin(binding.acks(), ", "));
    // A binding that holds its subjects fail-closed must not read like one in force.
    if (binding.dangling()) {
      absl::StrAppend(&out, "  DANGLING");
    } else if (!binding.problem().empty()) {
      absl::StrAppend(&out, "  DOES NOT LOAD");
    }
    absl::StrAppend(&out, "\n");
    if (!binding.problem().empty()) absl::StrAppend(&out, "    ", binding.problem(), "\n");
  }
  return out;
}

std::string RenderEntries(const leash::v1::ListEntriesResponse& response) {
  std::string out;
  std::vector<std::string> surfaces;
  for (const auto& [surface, mode] : response.floor_modes()) surfaces.push_back(surface);
  std::sort(surfaces.begin(), surfaces.end());
  size_t width = 5;
  for (const leash::v1::ListedEntry& entry : response.entries()) {
    width = std::max(width, entry.entry().size());
  }
  for (const std::string& surface : surfaces) {
    absl::StrAppend(&out, surface, " (floor mode: ", response.floor_modes().at(surface), ")\n");
    bool any = false;
    for (const leash::v1::ListedEntry& entry : response.entries()) {
      if (entry.surface() != surface) continue;
      any = true;
      absl::StrAppend(&out, absl::StrFormat("  %-5s %-*s  %s  %s", entry.list(),
                                            static_cast<int>(width), entry.entry(),
                                            entry.source(), entry.file()));
      if (entry.source() != "floor") {
        absl::StrAppend(&out, entry.bound_to().empty()
                                  ? "  (bound to nobody)"
                                  : absl::StrCat("  (bound to ",
                                                 absl::StrJoin(entry.bound_to(), ", "), ")"));
      }
      absl::StrAppend(&out, "\n");
    }
    if (!any) absl::StrAppend(&out, "  no entries\n");
  }
  std::vector<std::string> unreadable;
  for (const auto& [name, why] : response.unreadable_profiles()) unreadable.push_back(name);
  std::sort(unreadable.begin(), unreadable.end());
  for (const std::string& name : unreadable) {
    absl::StrAppend(&out, "profile '", name, "' does not load, its entries are not listed: ",
                    response.unreadable_profiles().at(name), "\n");
  }
  return out;
}

std::string RenderReconcile(const leash::v1::ReconcileReport& report) {
  std::string out;
  if (!report.error().empty()) {
    return absl::StrCat("reconcile failed, nothing was changed: ", report.error(), "\n");
  }
  absl::StrAppend(&out, "reconciled: ", report.changes_size(), " changed, ", report.unchanged(),
                  " unchanged (", absl::StrFormat("%.1f", report.duration_us() / 1000.0),
                  " ms)\n");
  for (const leash::v1::SubjectChange& change : report.changes()) {
    absl::StrAppend(&out, "  ", change.change(), " ", change.account(), " (uid ", change.uid(),
                    ")", change.detail().empty() ? "" : ": " + change.detail(), "\n");
  }
  for (const std::string& warning : report.warnings()) absl::StrAppend(&out, "  ", warning, "\n");
  return out;
}

std::string RenderNotInForce(const leash::v1::ReconcileReport& report) {
  std::string out;
  for (const std::string& line : report.not_in_force()) absl::StrAppend(&out, "  - ", line, "\n");
  return out;
}

}  // namespace leash::cli
