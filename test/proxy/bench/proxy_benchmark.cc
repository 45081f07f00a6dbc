// leash-proxy's benchmarks, each a ratio against a baseline measured in the same run, in a
// fresh network namespace (connection-rate runs leave TIME_WAIT behind):
//   1. bulk throughput through leash-proxy vs direct vs a minimal single-threaded splice relay
//      (target: >= 0.90 of the relay);
//   2. connect-to-first-byte p50/p99 through leash-proxy, deciding on an IP literal and on an
//      HTTP Host name the proxy resolved (cached after the first; the client aims at an address
//      no entry allows, so the name decides and the proxy connects where the name resolved,
//      through the destination guard), vs the relay (target: p50 <= 1.3x the relay's);
//   3. 10,000 idle connections held through leash-proxy, its RSS before and while held.
// Run as root: bazel run -c opt //test/proxy:proxy_benchmark [-- --seconds=3 --reps=3
//   --connections=2000 --idle=10000 --only=throughput|latency|idle]
// Clients run as test accounts so the kernel redirects them, exactly as for an agent.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "test/fixtures/subprocess.h"
#include "test/proxy/testbed.h"

namespace leash::testing {
namespace {

constexpr uint16_t kProxyPort = 18101;
constexpr uint16_t kRelayPort = 18102;
constexpr size_t kProxyAgent = 0, kRelayAgent = 1;
constexpr char kServer[] = "192.0.2.11:5001";
// Where the name row's client aims: on the test hosts' network, allowed by no entry (nothing
// listens there; the redirect takes the connection before any packet leaves).
constexpr char kUnallowedTarget[] = "192.0.2.12:5001";
// Where bench.test resolves: a second server on the same test host, at an address no entry
// names, so the name alone allows it and the destination guard judges it (192.0.2.11 is
// named by an IP entry, which the guard would let through unexamined).
constexpr char kNamedServer[] = "192.0.2.13:5001";
constexpr char kPolicy[] =
    R"pb(network { mode: MODE_WHITELIST allow { entries: "bench.test" entries: "192.0.2.11" } })pb";

struct Settings {
  double seconds = 3;
  int reps = 3;
  int connections = 2000;
  int idle = 10000;
  std::string only;  // one phase, or empty for all
};

// Thrown to main (never out of this file) so every fixture's destructor still removes its
// namespace and accounts when a run fails.
struct Abort {
  std::string what;
};

[[noreturn]] void Die(const std::string& what) { throw Abort{what}; }

template <typename T>
T Must(absl::StatusOr<T> value, const std::string& what) {
  if (!value.ok()) Die(absl::StrCat(what, ": ", value.status().ToString()));
  return std::move(*value);
}

// One namespace with the server, the relay and the proxy running.
struct Bench {
  std::unique_ptr<ProxyTestbed> bed;
  std::unique_ptr<Background> server;
  std::unique_ptr<Background> named_server;
  std::unique_ptr<Background> relay;
};

Bench Start() {
  TestbedOptions options;
  options.agents = {{"lpx-bp", kProxyPort}, {"lpx-br", kRelayPort}};
  options.v0_addresses = {"192.0.2.10/24"};
  options.v1_addresses = {"192.0.2.11/24", "192.0.2.13/24"};
  options.hosts_file = "192.0.2.13 bench.test\n";
  options.helpers = {"test/proxy/proxy_bench_tool", "test/proxy/minimal_splice_relay"};
  // Row 3 holds all its idle connections as one subject: past the per-subject default (4096),
  // which is there so that one agent cannot take every other agent's share.
  options.proxy_flags = {"--max-connections-per-subject=1000000"};
  Bench bench;
  bench.bed = Must(ProxyTestbed::Create(options), "testbed");
  // The server is a test host off this host (the remote namespace): the proxy refuses a name
  // that leads to an address of its own host.
  bench.server = std::make_unique<Background>(Must(
      Background::Start(
          bench.bed->remote().Exec({bench.bed->Helper("proxy_bench_tool"), "server", kServer})),
      "server"));
  bench.named_server = std::make_unique<Background>(Must(
      Background::Start(bench.bed->remote().Exec(
          {bench.bed->Helper("proxy_bench_tool"), "server", kNamedServer})),
      "named server"));
  bench.relay = std::make_unique<Background>(Must(
      Background::Start(bench.bed->ns().Exec(
          {bench.bed->Helper("minimal_splice_relay"), absl::StrCat(kRelayPort)})),
      "relay"));
  // Connection-rate runs leave two TIME_WAIT sockets per proxied connection in the namespace;
  // a wider ephemeral range (per namespace) keeps a run of a few thousand from running out.
  Must(bench.bed->RunAsRoot({"sysctl", "-qw", "net.ipv4.ip_local_port_range=10000 65000"}),
       "sysctl");
  if (absl::Status started = bench.bed->StartProxy(); !started.ok()) Die(started.ToString());
  Must(bench.bed->PublishAndWait({bench.bed->Subject(kProxyAgent, kPolicy)}), "publish");
  return bench;
}

// Runs the tool as `who` (kRoot: no redirect, i.e. direct) and returns its stdout.
constexpr size_t kRoot = 99;
std::string Tool(const Bench& bench, size_t who, std::vector<std::string> args) {
  args.insert(args.begin(), bench.bed->Helper("proxy_bench_tool"));
  RunResult run = Must(who == kRoot ? bench.bed->RunAsRoot(args, absl::Minutes(5))
                                    : bench.bed->RunAs(who, args, absl::Minutes(5)),
                       "tool");
  if (run.exit_code != 0) Die(absl::StrCat("tool ", args[1], " failed: ", run.out));
  return std::string(absl::StripTrailingAsciiWhitespace(run.out));
}

double Field(const std::string& line, const std::string& key) {
  for (absl::string_view part : absl::StrSplit(line, ' ')) {
    if (absl::ConsumePrefix(&part, key + "=")) {
      double value = 0;
      if (absl::SimpleAtod(part, &value)) return value;
    }
  }
  Die(absl::StrCat("no ", key, " in '", line, "'"));
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

uint64_t RssKib(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    absl::string_view view = line;
    if (absl::ConsumePrefix(&view, "VmRSS:")) {
      uint64_t kib = 0;
      absl::SimpleAtoi(absl::StripSuffix(absl::StripAsciiWhitespace(view), " kB"), &kib);
      return kib;
    }
  }
  return 0;
}

int OpenFds(pid_t pid) {
  int count = 0;
  DIR* dir = opendir(absl::StrCat("/proc/", pid, "/fd").c_str());
  if (dir == nullptr) return -1;
  while (dirent* entry = readdir(dir)) count += entry->d_name[0] != '.';
  closedir(dir);
  return count;
}

void Throughput(const Settings& s) {
  Bench bench = Start();
  const std::string secs = absl::StrCat(s.seconds);
  std::vector<double> direct, relay, proxy;
  for (int rep = 0; rep < s.reps; ++rep) {
    for (auto [who, out] : {std::pair<size_t, std::vector<double>*>{kRoot, &direct},
                            {kRelayAgent, &relay},
                            {kProxyAgent, &proxy}}) {
      const std::string line = Tool(bench, who, {"bulk", kServer, secs});
      out->push_back(Field(line, "bytes") * 8 / Field(line, "seconds") / 1e9);
    }
  }
  auto spread = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return absl::StrFormat("(runs %.2f..%.2f)", v.front(), v.back());
  };
  const double d = Median(direct), r = Median(relay), p = Median(proxy);
  std::printf("bulk throughput, client -> 192.0.2.11 (median of %d runs of %.0f s each):\n", s.reps,
              s.seconds);
  std::printf("  direct          %6.2f Gbit/s %s\n", d, spread(direct).c_str());
  std::printf("  minimal relay   %6.2f Gbit/s %s  %.2f of direct\n", r, spread(relay).c_str(), r / d);
  std::printf("  leash-proxy     %6.2f Gbit/s %s  %.2f of direct, %.2f of the relay (target >= 0.90)\n",
              p, spread(proxy).c_str(), p / d, p / r);
  // Each run's own ratio: the three modes of one run ran back to back.
  std::vector<double> ratios;
  for (size_t i = 0; i < proxy.size(); ++i) ratios.push_back(proxy[i] / relay[i]);
  std::printf("  proxy/relay per run: median %.2f %s\n", Median(ratios), spread(ratios).c_str());
  std::fflush(stdout);
}

void Latency(const Settings& s) {
  // One namespace; the four cases take turns in rounds of connections/rounds each, so every
  // case sees the same moments of the machine's load. Samples are pooled per case. (About
  // 14,000 TIME_WAIT ports at the end: within the widened ephemeral range.)
  constexpr int kRounds = 10;
  const std::string per_round = absl::StrCat(std::max(1, s.connections / kRounds));
  struct Row {
    std::string name;
    size_t who;
    std::string target;
    std::string host;
    std::vector<double> samples;
  };
  std::vector<Row> rows = {
      {"direct", kRoot, kServer, "192.0.2.11", {}},
      {"minimal relay", kRelayAgent, kServer, "192.0.2.11", {}},
      {"leash-proxy, IP literal", kProxyAgent, kServer, "192.0.2.11", {}},
      {"leash-proxy, Host bench.test", kProxyAgent, kUnallowedTarget, "bench.test", {}}};
  Bench bench = Start();
  // Warm the proxy's resolver cache for bench.test (the "cached name" case).
  Tool(bench, kProxyAgent, {"latency", kUnallowedTarget, "1", "bench.test"});
  for (int round = 0; round < kRounds; ++round) {
    // The order rotates too, so no case always runs right after another (or after a pause).
    for (size_t k = 0; k < rows.size(); ++k) {
      Row& row = rows[(k + round) % rows.size()];
      std::string line = Tool(bench, row.who, {"latency", row.target, per_round, row.host});
      absl::string_view values = line;
      if (!absl::ConsumePrefix(&values, "us=")) Die(absl::StrCat("bad latency output: ", line));
      for (absl::string_view value : absl::StrSplit(values, ',')) {
        double us = 0;
        if (absl::SimpleAtod(value, &us)) row.samples.push_back(us);
      }
    }
  }
  auto quantile = [](std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(q * (v.size() - 1))];
  };
  std::printf("connect-to-first-byte, %zu connections per case in %d interleaved rounds:\n",
              rows[0].samples.size(), kRounds);
  const double relay_p50 = quantile(rows[1].samples, 0.5), relay_p99 = quantile(rows[1].samples, 0.99);
  for (const Row& row : rows) {
    const double p50 = quantile(row.samples, 0.5), p99 = quantile(row.samples, 0.99);
    std::printf("  %-30s p50 %7.1f us   p99 %7.1f us", row.name.c_str(), p50, p99);
    if (row.who == kProxyAgent) {
      std::printf("   p50 %.2fx the relay's (target <= 1.3), p99 %.2fx", p50 / relay_p50,
                  p99 / relay_p99);
    }
    std::printf("\n");
  }
  std::fflush(stdout);
}

void Idle(Settings s) {
  // Every idle connection costs the proxy two descriptors (client and upstream), and the proxy
  // inherits this process's hard RLIMIT_NOFILE unless it may raise it (CAP_SYS_RESOURCE).
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  const int fits = static_cast<int>((limit.rlim_max - 64) / 2);
  if (s.idle > fits) {
    std::printf("  (hard RLIMIT_NOFILE here is %llu: holding %d instead of %d)\n",
                static_cast<unsigned long long>(limit.rlim_max), fits, s.idle);
    s.idle = fits;
  }
  Bench bench = Start();
  const pid_t pid = bench.bed->proxy_pid();
  const uint64_t before = RssKib(pid);
  const int fds_before = OpenFds(pid);
  const std::string log = "/tmp/lpx-bench-hold.out";
  Background hold = Must(
      Background::Start(bench.bed->ns().Exec(bench.bed->account(kProxyAgent).AsUser(
                            {bench.bed->Helper("proxy_bench_tool"), "hold", kServer,
                             absl::StrCat(s.idle), "bench.test", "5"})),
                        log),
      "hold");
  const bool held = WaitFor(
      [&] {
        std::ifstream file(log);
        std::string line;
        return std::getline(file, line) && absl::StartsWith(line, "held ");
      },
      absl::Minutes(3));
  if (!held) Die(absl::StrCat("the hold client never held its connections; see ", log));
  const uint64_t during = RssKib(pid);
  const int fds_during = OpenFds(pid);
  hold.Wait(absl::Seconds(30)).IgnoreError();
  std::remove(log.c_str());
  std::printf("idle connections held through leash-proxy: %d\n", s.idle);
  std::printf("  proxy RSS %llu KiB before, %llu KiB while held: %.0f bytes per idle connection\n",
              static_cast<unsigned long long>(before), static_cast<unsigned long long>(during),
              (static_cast<double>(during) - before) * 1024 / s.idle);
  std::printf("  proxy descriptors %d before, %d while held (%.2f per connection)\n", fds_before,
              fds_during, static_cast<double>(fds_during - fds_before) / s.idle);
  std::fflush(stdout);
}

}  // namespace
}  // namespace leash::testing

int main(int argc, char** argv) {
  using leash::testing::Settings;
  if (geteuid() != 0) {
    std::cerr << "proxy_benchmark must run as root (namespaces, accounts, nft)\n";
    return 2;
  }
  Settings settings;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    double value = 0;
    auto take = [&](absl::string_view name) {
      return absl::ConsumePrefix(&arg, name) && absl::SimpleAtod(arg, &value);
    };
    if (take("--seconds=")) {
      settings.seconds = value;
    } else if (take("--reps=")) {
      settings.reps = static_cast<int>(value);
    } else if (take("--connections=")) {
      settings.connections = static_cast<int>(value);
    } else if (take("--idle=")) {
      settings.idle = static_cast<int>(value);
    } else if (absl::ConsumePrefix(&arg, "--only=") &&
               (arg == "throughput" || arg == "latency" || arg == "idle")) {
      settings.only = std::string(arg);
    } else {
      std::cerr << "usage: proxy_benchmark [--seconds=3] [--reps=3] [--connections=2000] "
                   "[--idle=10000] [--only=throughput|latency|idle]\n";
      return 2;
    }
  }
  // Each phase gets a fresh namespace (and fresh accounts).
  try {
    const auto runs = [&](const char* phase) {
      return settings.only.empty() || settings.only == phase;
    };
    if (runs("throughput")) leash::testing::Throughput(settings);
    if (runs("latency")) leash::testing::Latency(settings);
    if (runs("idle")) leash::testing::Idle(settings);
  } catch (const leash::testing::Abort& abort) {
    std::cerr << "proxy_benchmark: " << abort.what << "\n";
    return 1;
  }
  return 0;
}
