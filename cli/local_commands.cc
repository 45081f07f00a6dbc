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
#include "cli/leashd_exec.h"
#include "engine/config_defaults.h"

namespace leash::cli {
namespace {


}  // namespace

int RunInit(const Args& args, Io io) {
  const std::string user = args.Option("user");
  if (user.empty() || args.words.size() != 1) {
    io.err << "usage: leash init --user <name>\n";
    return kExitUsage;
  }
  // The floor file is leashd's: leashd writes it (controlplane/host_commands.h).
  std::vector<std::string> flags = {"--init", "--user=" + user, "--config=" + args.config_path};
  if (args.json) flags.push_back("--json");
  return ExecLeashd(flags, io);
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
  std::vector<std::string> flags = {"--config=" + args.config_path};
  for (const auto& [name, value] : args.options) flags.push_back("--" + name + "=" + value);
  return ExecLeashd(flags, io);
}

}  // namespace leash::cli
