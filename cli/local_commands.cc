// Commands that act on this host directly rather than through leashd: init (before there is a
// service), logs (reads the decision log), restart (the service manager), and running the
// service itself.
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/offline.h"
#include "cli/render.h"
#include "controlplane/floor_file.h"
#include "base/install_layout.h"
#include "engine/config_defaults.h"

namespace leash::cli {
namespace {

// The floor `leash init` writes when there is none: closed by default where that cannot brick
// the agent (network, tools), and a blacklist of the obvious on the filesystem and commands.
leash::v1::Config InitialFloor(const std::string& user) {
  leash::v1::Config c;
  c.set_user(user);
  c.set_fail_mode("closed");
  c.mutable_network()->set_mode(leash::v1::MODE_WHITELIST);
  c.mutable_network()->mutable_allow();
  c.mutable_network()->mutable_deny();
  c.mutable_filesystem()->set_mode(leash::v1::MODE_BLACKLIST);
  c.mutable_filesystem()->mutable_allow();
  for (const char* path : {"/etc/shadow", "/etc/sudoers", "/etc/leash", "/var/lib/leash", "/root"}) {
    c.mutable_filesystem()->mutable_deny()->add_entries(path);
  }
  c.mutable_commands()->set_mode(leash::v1::MODE_BLACKLIST);
  c.mutable_commands()->mutable_allow();
  for (const char* binary : {"sudo", "su", "pkexec", "doas"}) {
    c.mutable_commands()->mutable_deny()->add_entries(binary);
  }
  c.mutable_tools()->set_mode(leash::v1::MODE_WHITELIST);
  c.mutable_tools()->mutable_allow();
  c.mutable_tools()->mutable_deny();
  (*c.mutable_tools()->mutable_inspect())["secrets"] = leash::v1::INSPECT_ACTION_BLOCK;
  (*c.mutable_tools()->mutable_inspect())["pii"] = leash::v1::INSPECT_ACTION_LOG;
  (*c.mutable_tools()->mutable_inspect())["priv_esc"] = leash::v1::INSPECT_ACTION_BLOCK;
  c.mutable_logging()->set_level("info");
  c.mutable_logging()->set_decisions(std::string(engine::kDefaultDecisionLog));
  c.mutable_enforcers()->set_network(true);
  c.mutable_enforcers()->set_filesystem(true);
  c.mutable_enforcers()->set_tools(true);
  return c;
}

}  // namespace

int RunInit(const Args& args, Io io) {
  const std::string user = args.Option("user");
  if (user.empty() || args.words.size() != 1) {
    io.err << "usage: leash init --user <name>\n";
    return kExitUsage;
  }
  if (geteuid() != 0) {
    io.err << "leash init: must run as root (it may create the account and writes "
           << args.config_path << " as root:" << user << " 0640)\n";
    return kExitRefused;
  }
  bool created = false;
  if (getpwnam(user.c_str()) == nullptr) {
    const std::string command =
        absl::StrCat("useradd --create-home --user-group --shell /bin/bash '", user, "'");
    if (user.find('\'') != std::string::npos || std::system(command.c_str()) != 0) {
      io.err << "leash init: could not create the account '" << user << "' (" << command << ")\n";
      return kExitRefused;
    }
    created = true;
  }
  const passwd* pw = getpwnam(user.c_str());
  if (pw == nullptr) {
    io.err << "leash init: account '" << user << "' not found after creating it\n";
    return kExitRefused;
  }
  leash::v1::Config config;
  bool existed = false;
  absl::StatusOr<leash::v1::Config> current = controlplane::LoadFloor(args.config_path);
  if (current.ok()) {
    config = *current;
    config.set_user(user);
    existed = true;
  } else if (absl::IsNotFound(current.status())) {
    config = InitialFloor(user);
  } else {
    io.err << "leash init: " << current.status().message()
           << "\nfix the config (or move it aside) and run leash init again\n";
    return kExitRefused;
  }
  const std::string dir = args.config_path.substr(0, args.config_path.rfind('/'));
  if (!dir.empty() && mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    io.err << "leash init: mkdir " << dir << ": " << std::strerror(errno) << "\n";
    return kExitRefused;
  }
  // Re-running init for the user the config already names (the installer does, on every
  // upgrade) keeps the operator's file byte for byte — comments and layout included — and
  // only re-states its mode and owner: "re-states it on upgrade so an existing box is repaired".
  const bool keep = existed && current->user() == user;
  absl::Status written = keep
                             ? controlplane::RestateFloorPermissions(args.config_path, pw->pw_gid)
                             : controlplane::WriteFloor(args.config_path, config, pw->pw_gid);
  if (!written.ok()) {
    io.err << "leash init: " << written.message() << "\n";
    return kExitRefused;
  }
  if (args.json) {
    io.out << JsonObject({{"user", user},
                          {"uid", "", static_cast<double>(pw->pw_uid), true},
                          {"account_created", "", 0, false, true, created},
                          {"config", args.config_path},
                          {"config_written", keep ? "kept" : existed ? "updated" : "created"},
                          {"mode", "0640"},
                          {"owner", "root:" + user}})
           << "\n";
    return kExitOk;
  }
  io.out << "leashed user: " << user << " (uid " << pw->pw_uid << ")"
         << (created ? ", account created" : "") << "\n"
         << (keep ? "kept " : existed ? "updated " : "wrote ") << args.config_path
         << (keep ? " as it was, re-stated" : "") << " (0640 root:" << user
         << ": the leashed user reads it through the group and cannot rewrite it)\n"
         << "next: review it, `leash validate`, then start the service "
            "(systemctl enable --now leash.service); if it is already running, `leash restart`\n";
  return kExitOk;
}

int RunLogs(const Args& args, Io io) {
  absl::StatusOr<leash::v1::Config> config = LoadConfigFile(args.config_path);
  if (!config.ok()) {
    io.err << "leash logs: " << config.status().message() << "\n";
    return kExitRefused;
  }
  const std::string sink = engine::WithDefaults(*config).logging().decisions();
  if (sink == "stdout") {
    io.err << "leash logs: the decision log goes to leashd's stdout; read it with "
              "journalctl -u leash.service"
           << (args.follow ? " -f" : "") << "\n";
    return kExitRefused;
  }
  int tail = 20;
  if (args.HasOption("tail")) {
    try {
      tail = std::stoi(args.Option("tail"));
    } catch (...) {
      tail = -1;
    }
    if (tail < 0) {
      io.err << "leash logs: --tail takes a number of lines\n";
      return kExitUsage;
    }
  }
  std::ifstream file(sink, std::ios::binary);
  if (!file) {
    io.err << "leash logs: cannot read " << sink << ": " << std::strerror(errno) << "\n";
    return kExitRefused;
  }
  std::deque<std::string> last;
  std::string line;
  while (std::getline(file, line)) {
    last.push_back(line);
    if (static_cast<int>(last.size()) > tail) last.pop_front();
  }
  for (const std::string& l : last) io.out << l << "\n";
  io.out.flush();
  if (!args.follow) return kExitOk;

  // Follow: print what is appended; start over when the file is truncated or replaced.
  file.clear();
  std::streamoff offset = file.tellg();
  struct stat st;
  ino_t inode = stat(sink.c_str(), &st) == 0 ? st.st_ino : 0;
  std::string partial;
  while (true) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (stat(sink.c_str(), &st) != 0) continue;
    if (st.st_ino != inode || st.st_size < offset) {
      file.close();
      file.open(sink, std::ios::binary);
      inode = st.st_ino;
      offset = 0;
      partial.clear();
    }
    if (st.st_size == offset) continue;
    file.clear();
    file.seekg(offset);
    std::string chunk(static_cast<size_t>(st.st_size - offset), '\0');
    file.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    chunk.resize(static_cast<size_t>(file.gcount()));
    offset += static_cast<std::streamoff>(chunk.size());
    partial += chunk;
    size_t newline;
    while ((newline = partial.find('\n')) != std::string::npos) {
      io.out << partial.substr(0, newline + 1);
      partial.erase(0, newline + 1);
    }
    io.out.flush();
  }
}

int RunRestart(const Args& args, Io io) {
  struct stat st;
  if (stat("/run/systemd/system", &st) == 0) {
    const int rc = std::system("systemctl restart leash.service");
    if (rc != 0) {
      io.err << "leash restart: systemctl restart leash.service failed; see "
                "systemctl status leash.service\n";
      return kExitRefused;
    }
    io.out << (args.json ? JsonObject({{"restarted", "leash.service"}}) : "restarted leash.service")
           << "\n";
    return kExitOk;
  }
  io.err << "leash restart: systemd is not running here, so there is no leash.service to "
            "restart. Stop leashd with `kill $(cat /run/leash/leashd.pid)` (its stop path "
            "releases every chain) and start it again with `leash`.\n"
            "To pick up a policy change, a restart is the wrong instrument: `leash reconcile` "
            "changes only what differs without un-confining anybody.\n";
  return kExitRefused;
}

int RunService(const Args& args, Io io) {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("LEASH_LEASHD")) candidates.push_back(env);
  candidates.push_back(controlplane::FindLeashProgram("leashd", "controlplane"));
  for (const std::string& path : candidates) {
    if (access(path.c_str(), X_OK) != 0) continue;
    std::vector<std::string> argv = {path, "--config=" + args.config_path};
    for (const auto& [name, value] : args.options) argv.push_back("--" + name + "=" + value);
    std::vector<char*> raw;
    for (std::string& a : argv) raw.push_back(a.data());
    raw.push_back(nullptr);
    execv(path.c_str(), raw.data());
    io.err << "leash: exec " << path << ": " << std::strerror(errno) << "\n";
    return kExitRefused;
  }
  io.err << "leash: cannot find leashd (looked in $LEASH_LEASHD, next to leash, and "
            "/usr/lib/leash/leashd); is Leash installed? (scripts/install)\n";
  return kExitRefused;
}

}  // namespace leash::cli
