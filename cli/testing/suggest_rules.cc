#include "cli/testing/suggest_rules.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/network_entry.h"

namespace leash::cli::testing {
namespace {

using leash::v1::Surface;

AdversarialHost* Build() {
  auto* host = new AdversarialHost();
  FakePathFacts& f = host->facts;
  const uint32_t a = kAgentUid;
  // The loader, by its real path, its usual links, a hard link with an innocent name, and a
  // loader of another libc found by its name only.
  const std::string loader = "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2";
  f.RootProgram(loader);
  f.Link("/lib64/ld-linux-x86-64.so.2", loader);
  f.Link("/usr/bin/ld.so", "../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2");
  f.HardLink("/usr/local/bin/rtld-copy", loader);
  f.RootProgram("/opt/musl/lib/ld-musl-x86_64.so.1");
  // A loader known only as a program's PT_INTERP.
  f.RootProgram("/opt/custom/rtld").RootProgram("/opt/custom/app");
  f.Interpreter("/opt/custom/app", "/opt/custom/rtld");
  f.RootProgram("/usr/local/bin/custom-tool")
      .Interpreter("/usr/local/bin/custom-tool", "/opt/custom/rtld");
  f.RootProgram("/usr/bin/git").Interpreter("/usr/bin/git", "/lib64/ld-linux-x86-64.so.2");
  // The agent's own home and programs, and links either way.
  f.Put("/home/agent", FakePathFacts::Dir(a, 0755));
  f.Put("/home/agent/bin", FakePathFacts::Dir(a, 0755));
  f.Put("/home/agent/bin/tool", FakePathFacts::File(a, 0755));
  f.Put("/home/agent/work", FakePathFacts::Dir(a, 0755));
  f.Link("/home/agent/bin/git", "/usr/bin/git", a);
  f.Link("/usr/bin/agent-tool", "/home/agent/bin/tool");
  // Folders and files others may write: no sticky bit, group write, an ACL, a sticky /tmp.
  f.Put("/srv/shared", FakePathFacts::Dir(0, 0777));
  f.Put("/srv/shared/tool", FakePathFacts::File(0, 0755));
  f.Put("/srv/group", FakePathFacts::Dir(0, 0775));
  f.Put("/srv/group/tool", FakePathFacts::File(0, 0755));
  f.Put("/usr/bin/group-writable", FakePathFacts::File(0, 0775));
  f.RootProgram("/usr/bin/acl-tool");
  f.At("/usr/bin/acl-tool").acl_grants_write = true;
  f.Put("/tmp", FakePathFacts::Dir(0, 01777));
  f.RootProgram("/tmp/root-tool");
  f.Put("/tmp/agent-tool", FakePathFacts::File(a, 0755));
  f.Put("/tmp/agent-dir", FakePathFacts::Dir(a, 0755));
  f.Put("/tmp/agent-dir/tool", FakePathFacts::File(0, 0755));
  f.Put("/usr/bin/other-owner", FakePathFacts::File(3000, 0755));
  // procfs, FUSE, a link loop.
  f.Put("/proc", FakePathFacts::Dir(0, 0555));
  f.At("/proc").filesystem = NodeFacts::Filesystem::kProc;
  f.Link("/proc/self", "4242");
  f.At("/proc/self").filesystem = NodeFacts::Filesystem::kProc;
  f.Put("/proc/4242", FakePathFacts::Dir(0, 0555));
  f.At("/proc/4242").filesystem = NodeFacts::Filesystem::kProc;
  f.Link("/proc/4242/exe", "/usr/bin/git");
  f.At("/proc/4242/exe").filesystem = NodeFacts::Filesystem::kProc;
  f.Put("/mnt/fuse", FakePathFacts::Dir(0, 0755));
  f.At("/mnt/fuse").filesystem = NodeFacts::Filesystem::kFuse;
  f.RootProgram("/mnt/fuse/tool");
  f.At("/mnt/fuse/tool").filesystem = NodeFacts::Filesystem::kFuse;
  f.Link("/usr/bin/loop-a", "/usr/bin/loop-b").Link("/usr/bin/loop-b", "/usr/bin/loop-a");
  // Root's data tree, which a collapse may produce.
  f.Put("/srv/data/sub", FakePathFacts::Dir(0, 0755));

  host->good_programs = {"/usr/bin/git", "/opt/custom/app", "/tmp/root-tool"};
  host->bad_programs = {"/lib64/ld-linux-x86-64.so.2",
                        loader,
                        "/usr/bin/ld.so",
                        "/usr/local/bin/rtld-copy",
                        "/opt/musl/lib/ld-musl-x86_64.so.1",
                        "/opt/custom/rtld",
                        "/home/agent/bin/tool",
                        "/home/agent/bin/git",
                        "/usr/bin/agent-tool",
                        "/srv/shared/tool",
                        "/srv/group/tool",
                        "/usr/bin/group-writable",
                        "/usr/bin/acl-tool",
                        "/tmp/agent-tool",
                        "/tmp/agent-dir/tool",
                        "/usr/bin/other-owner",
                        "/proc/self/exe",
                        "/proc/4242/exe",
                        "/mnt/fuse/tool",
                        "/usr/bin/loop-a",
                        "/usr/bin/missing"};
  host->root_folders = {"/srv/data", "/srv/data/sub", "/usr/bin", "/opt/custom"};
  host->agent_folders = {"/home/agent/work", "/home/agent/bin", "/srv/shared", "/tmp",
                         "/tmp/agent-dir"};
  return host;
}

bool Listed(const Fragment& fragment, const std::string& key) {
  const std::string quoted = absl::StrCat("'", key, "'");
  return std::any_of(fragment.notes.begin(), fragment.notes.end(),
                     [&](const std::string& note) { return absl::StrContains(note, quoted); });
}

const google::protobuf::RepeatedPtrField<std::string>& Allowed(const Fragment& fragment,
                                                               Surface surface) {
  switch (surface) {
    case leash::v1::SURFACE_NETWORK:
      return fragment.config.network().allow().entries();
    case leash::v1::SURFACE_FILESYSTEM:
      return fragment.config.filesystem().allow().entries();
    case leash::v1::SURFACE_COMMANDS:
      return fragment.config.commands().allow().entries();
    default:
      return fragment.config.tools().allow().entries();
  }
}

}  // namespace

const AdversarialHost& Host() {
  static const AdversarialHost* host = Build();
  return *host;
}

std::vector<std::string> BrokenRules(const Fragment& fragment, const Observations& observations) {
  std::vector<std::string> broken;
  const AdversarialHost& host = Host();
  for (const std::string& entry : Allowed(fragment, leash::v1::SURFACE_COMMANDS)) {
    if (!host.good_programs.count(entry)) {
      broken.push_back(absl::StrCat("commands entry '", entry,
                                    "' is not a root-controlled program that is not the loader"));
    }
  }
  const SeenMap& hosts = observations.needed(leash::v1::SURFACE_NETWORK);
  for (const std::string& entry : Allowed(fragment, leash::v1::SURFACE_NETWORK)) {
    absl::StatusOr<engine::NetworkEntry> parsed = engine::ParseNetworkEntry(entry);
    if (!parsed.ok() || parsed->kind == engine::NetworkEntry::Kind::kWildcard) {
      broken.push_back(absl::StrCat("network entry '", entry, "' is a wildcard or not an entry"));
    }
    if (!hosts.count(entry)) {
      broken.push_back(absl::StrCat("network entry '", entry, "' is not a name seen as such"));
    }
  }
  const SeenMap& paths = observations.needed(leash::v1::SURFACE_FILESYSTEM);
  for (const std::string& entry : Allowed(fragment, leash::v1::SURFACE_FILESYSTEM)) {
    if (paths.count(entry) || host.root_folders.count(entry)) continue;
    broken.push_back(absl::StrCat("filesystem entry '", entry,
                                  "' is neither a path seen nor a folder only root could fill"));
  }
  // Left out only with a note naming it: each seen key an entry (or, for a path, under one)
  // or listed.
  for (Surface surface :
       {leash::v1::SURFACE_NETWORK, leash::v1::SURFACE_COMMANDS, leash::v1::SURFACE_FILESYSTEM}) {
    const auto& entries = Allowed(fragment, surface);
    for (const auto& [key, seen] : observations.needed(surface)) {
      const bool covered =
          std::any_of(entries.begin(), entries.end(), [&, &key = key](const std::string& e) {
            return e == key || (surface == leash::v1::SURFACE_FILESYSTEM &&
                                absl::StartsWith(key, absl::StrCat(e, "/")));
          });
      if (!covered && !Listed(fragment, key)) {
        broken.push_back(
            absl::StrCat("'", key, "' was seen, is not suggested, and no note says why"));
      }
    }
  }
  return broken;
}

}  // namespace leash::cli::testing
