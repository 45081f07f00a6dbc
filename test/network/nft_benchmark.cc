// Benchmarks of the nft applier, each figure beside a baseline measured in the same run, every
// measurement in a fresh network namespace (run as root):
//   bazel run -c opt //test/network:nft_benchmark -- [--repetitions=5] [--connects=400]
//
// 1. Apply time at 1,000 subjects — startup (Create + Prepare + ApplyAll of 1,000), one
//    subject added to 1,000, one removed from 1,000 — against `nft -f` of the equivalent
//    ruleset text (process start included, as leash's earlier implementation ran it).
// 2. Connect cost through the redirect (client connect() start to server accept() return):
//    one agent; the 1st and the 1,000th of 1,000 agents under the vmap dispatcher; and the same
//    two under a linear `meta skuid X jump agent_X` dispatcher built with `nft -f`, the shape
//    the vmap replaces. Client processes take each UID with setresuid (no accounts needed).
#include <arpa/inet.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "controlplane/nft_netfilter.h"
#include "controlplane/testing/fake_netfilter.h"
#include "test/fixtures/netns.h"
#include "test/fixtures/sample_stats.h"
#include "test/fixtures/subprocess.h"

namespace leash {
namespace {

using controlplane::NetfilterSubject;
using controlplane::NftNetfilter;
using controlplane::testing::MakeSubject;
using testing::Median;
using testing::NetNamespace;
using testing::Percentile;

constexpr int kSubjects = 1000;
constexpr uint32_t kFirstUid = 200000;
constexpr char kResolver[] = "192.0.2.53";

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "nft_benchmark: %s\n", what.c_str());
  std::exit(1);
}
void Check(const absl::Status& s, const std::string& what) {
  if (!s.ok()) Die(absl::StrCat(what, ": ", s.ToString()));
}

double NowUs() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

uint16_t PortOf(int i) { return static_cast<uint16_t>(18000 + i % 1000); }

std::vector<NetfilterSubject> Subjects() {
  std::vector<NetfilterSubject> out;
  for (int i = 0; i < kSubjects; ++i) {
    out.push_back(
        MakeSubject(kFirstUid + i, PortOf(i), false, {*engine::ParseIpAddress(kResolver)}));
  }
  return out;
}

// --- The equivalent nft text ----------------------------------------------------------------

std::string AgentRules(const std::string& family, uint32_t uid, uint16_t port) {
  const std::string chain = absl::StrCat("agent_", uid);
  if (family == "inet") {
    return absl::StrCat("add chain inet leash_filter ", chain, "\n",
                        "add rule inet leash_filter ", chain,
                        " tcp sport 18000-18999 tcp flags & (syn | ack) == syn | ack counter drop\n",
                        "add rule inet leash_filter ", chain,
                        " ct direction reply fib daddr type != local counter drop comment "
                        "\"leash: inbound dropped\"\n",
                        "add rule inet leash_filter ", chain,
                        " meta l4proto tcp fib daddr type != local counter drop comment "
                        "\"leash: tcp past the proxy dropped\"\n",
                        "add rule inet leash_filter ", chain, " ip daddr ", kResolver,
                        " udp dport 53 counter return\n", "add rule inet leash_filter ", chain,
                        " meta l4proto != tcp counter drop\n");
  }
  const std::string loopback = family == "ip" ? "ip daddr 127.0.0.0/8" : "ip6 daddr ::1";
  return absl::StrCat("add chain ", family, " leash ", chain, "\n", "add rule ", family,
                      " leash ", chain, " ", loopback,
                      " tcp dport != 18000-18999 counter return\n", "add rule ", family,
                      " leash ", chain, " meta l4proto tcp counter redirect to :", port, "\n");
}

// The table, its interval map and dispatcher, and (empty) every agent chain the elements will
// jump to, in nft's block form: nft 1.0.6 refuses (ENOENT) elements of an interval map whose
// jump targets were made by `add chain` commands of the same file, but takes declared ones.
std::string Skeleton(const std::string& family, const std::string& table, const std::string& type,
                     int priority) {
  std::string text = absl::StrCat("table ", family, " ", table, " {\n",
                                  "  map agents { type uid : verdict; flags interval; }\n");
  for (int i = 0; i < kSubjects; ++i) absl::StrAppend(&text, "  chain agent_", kFirstUid + i, " { }\n");
  absl::StrAppend(&text, "  chain output { type ", type, " hook output priority ", priority,
                  "; policy accept; meta skuid vmap @agents; }\n}\n");
  return text;
}

std::string Element(const std::string& family, const std::string& table, uint32_t uid) {
  return absl::StrCat("add element ", family, " ", table, " agents { ", uid, " : jump agent_",
                      uid, " }\n");
}

const std::vector<std::pair<std::string, std::string>>& Families() {
  static const auto* f = new std::vector<std::pair<std::string, std::string>>{
      {"ip", "leash"}, {"ip6", "leash"}, {"inet", "leash_filter"}};
  return *f;
}

std::string StartupText() {
  std::string text = Skeleton("ip", "leash", "nat", -100) + Skeleton("ip6", "leash", "nat", -100) +
                     Skeleton("inet", "leash_filter", "filter", 0) +
                     "add table inet leash_guard\n"
                     "add chain inet leash_guard output { type filter hook output priority 0; "
                     "policy accept; }\n"
                     "add rule inet leash_guard output ct direction reply ct label 127 fib daddr "
                     "type != local counter drop comment \"leash: answer of a closed socket "
                     "dropped\"\n";
  for (const auto& [family, table] : Families()) {
    for (int i = 0; i < kSubjects; ++i) text += AgentRules(family, kFirstUid + i, PortOf(i));
    for (int i = 0; i < kSubjects; ++i) text += Element(family, table, kFirstUid + i);
  }
  return text;
}

std::string AddOneText(uint32_t uid, uint16_t port) {
  std::string text;
  for (const auto& [family, table] : Families()) {
    text += AgentRules(family, uid, port) + Element(family, table, uid);
  }
  return text;
}

std::string RemoveOneText(uint32_t uid) {
  std::string text;
  for (const auto& [family, table] : Families()) {
    absl::StrAppend(&text, "delete element ", family, " ", table, " agents { ", uid, " }\n",
                    "delete chain ", family, " ", table, " agent_", uid, "\n");
  }
  return text;
}

// A linear dispatcher: one `meta skuid X jump agent_X` rule per UID in the hooked chain.
std::string LinearText() {
  std::string text =
      "add table ip leash\n"
      "add chain ip leash output { type nat hook output priority -100; policy accept; }\n";
  for (int i = 0; i < kSubjects; ++i) text += AgentRules("ip", kFirstUid + i, PortOf(i));
  for (int i = 0; i < kSubjects; ++i) {
    absl::StrAppend(&text, "add rule ip leash output meta skuid ", kFirstUid + i,
                    " jump agent_", kFirstUid + i, "\n");
  }
  return text;
}

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = absl::StrCat("/tmp/leash-nft-benchmark-", getpid(), "-", name, ".nft");
  std::ofstream(path) << text;
  return path;
}

// Wall time of `nft -f path`, run from the calling thread (so inside its namespace), in µs.
double TimeNftFile(const std::string& path) {
  const double start = NowUs();
  absl::StatusOr<std::string> out = testing::RunOk({"nft", "-f", path});
  const double elapsed = NowUs() - start;
  Check(out.status(), "nft -f " + path);
  return elapsed;
}

struct Fresh {
  std::unique_ptr<NetNamespace> ns;
  NetNamespace::Entered entered;
};
Fresh FreshNamespace(bool veth) {
  absl::StatusOr<std::unique_ptr<NetNamespace>> ns = NetNamespace::Create();
  Check(ns.status(), "create namespace");
  if (veth) Check((*ns)->AddVethPair({"192.0.2.10/24"}, {"192.0.2.11/24"}), "veth");
  absl::StatusOr<NetNamespace::Entered> entered = (*ns)->Enter();
  Check(entered.status(), "enter namespace");
  return Fresh{std::move(*ns), std::move(*entered)};
}

// --- Connect cost ---------------------------------------------------------------------------

// Listeners on 127.0.0.1 at `ports`; each accepted connection carries the client's connect()
// start time (8 bytes), and the server records accept-return minus that. Closed with a reset so
// nothing lingers in TIME_WAIT.
class AcceptTimer {
 public:
  explicit AcceptTimer(const std::vector<uint16_t>& ports) {
    for (uint16_t port : ports) {
      const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      int on = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(port);
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(fd, 64) != 0) {
        Die(absl::StrCat("listen on 127.0.0.1:", port, ": ", std::strerror(errno)));
      }
      fds_.push_back(fd);
    }
    thread_ = std::thread([this] { Serve(); });
  }
  ~AcceptTimer() {
    stop_ = true;
    thread_.join();
    for (int fd : fds_) close(fd);
  }
  std::vector<double> Take() {
    absl::MutexLock lock(&mu_);
    std::vector<double> out;
    std::swap(out, samples_);
    return out;
  }

 private:
  void Serve() {
    std::vector<pollfd> polls;
    for (int fd : fds_) polls.push_back({fd, POLLIN, 0});
    while (!stop_) {
      if (poll(polls.data(), polls.size(), 50) <= 0) continue;
      for (pollfd& p : polls) {
        if (p.revents == 0) continue;
        const int c = accept4(p.fd, nullptr, nullptr, SOCK_CLOEXEC);
        const double accepted = NowUs();
        if (c < 0) continue;
        double started = 0;
        if (read(c, &started, sizeof(started)) == sizeof(started)) {
          absl::MutexLock lock(&mu_);
          samples_.push_back(accepted - started);
        }
        linger l{1, 0};
        setsockopt(c, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
        close(c);
      }
    }
  }
  std::vector<int> fds_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  absl::Mutex mu_;
  std::vector<double> samples_ ABSL_GUARDED_BY(mu_);
};

// Makes `count` sequential connections to 192.0.2.11:443 as `uid` from a child process.
void ConnectAs(uint32_t uid, int count) {
  const pid_t pid = fork();
  if (pid < 0) Die("fork");
  if (pid == 0) {
    if (setgroups(0, nullptr) != 0 || setresgid(uid, uid, uid) != 0 ||
        setresuid(uid, uid, uid) != 0) {
      _exit(3);
    }
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(443);
    inet_pton(AF_INET, "192.0.2.11", &to.sin_addr);
    for (int i = 0; i < count; ++i) {
      const int fd = socket(AF_INET, SOCK_STREAM, 0);
      const double start = NowUs();
      if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) _exit(4);
      if (write(fd, &start, sizeof(start)) != sizeof(start)) _exit(5);
      char b;
      while (read(fd, &b, 1) > 0) {
      }
      close(fd);
    }
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    Die(absl::StrCat("connecting client as UID ", uid, " failed (status ", status, ")"));
  }
}

struct ConnectFigures {
  double p50 = 0;
  double p99 = 0;
};
// Alternates rounds between the UIDs so drift hits them equally.
std::map<uint32_t, ConnectFigures> MeasureConnects(AcceptTimer& timer,
                                                   const std::vector<uint32_t>& uids,
                                                   int connects) {
  constexpr int kRounds = 8;
  std::map<uint32_t, std::vector<double>> samples;
  for (uint32_t uid : uids) ConnectAs(uid, 20);  // warm-up
  timer.Take();
  for (int r = 0; r < kRounds; ++r) {
    for (uint32_t uid : uids) {
      ConnectAs(uid, connects / kRounds);
      std::vector<double> got = timer.Take();
      if (got.size() != static_cast<size_t>(connects / kRounds)) {
        Die(absl::StrCat("UID ", uid, ": ", got.size(), " accepts for ", connects / kRounds,
                         " connects"));
      }
      samples[uid].insert(samples[uid].end(), got.begin(), got.end());
    }
  }
  std::map<uint32_t, ConnectFigures> out;
  for (auto& [uid, v] : samples) out[uid] = {Percentile(v, 0.5), Percentile(v, 0.99)};
  return out;
}

int Main(int argc, char** argv) {
  int repetitions = 5;
  int connects = 400;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (absl::ConsumePrefix(&arg, "--repetitions=") && absl::SimpleAtoi(arg, &repetitions)) continue;
    arg = argv[i];
    if (absl::ConsumePrefix(&arg, "--connects=") && absl::SimpleAtoi(arg, &connects)) continue;
    Die(absl::StrCat("unknown argument ", argv[i], " (--repetitions=N --connects=N)"));
  }
  if (geteuid() != 0) Die("run as root (network namespaces and nftables)");

  const std::vector<NetfilterSubject> subjects = Subjects();
  const uint32_t added_uid = kFirstUid + kSubjects;
  const uint32_t removed_uid = kFirstUid + kSubjects / 2;
  const std::string startup_file = WriteFile("startup", StartupText());
  const std::string add_file = WriteFile("add", AddOneText(added_uid, 18500));
  const std::string remove_file = WriteFile("remove", RemoveOneText(removed_uid));
  const std::string linear_file = WriteFile("linear", LinearText());

  std::vector<double> ours_startup, ours_add, ours_remove, nft_startup, nft_add, nft_remove;
  for (int r = 0; r < repetitions; ++r) {
    {
      Fresh fresh = FreshNamespace(false);
      nft_startup.push_back(TimeNftFile(startup_file));
      nft_add.push_back(TimeNftFile(add_file));
      nft_remove.push_back(TimeNftFile(remove_file));
    }
    {
      Fresh fresh = FreshNamespace(false);
      double start = NowUs();
      absl::StatusOr<std::unique_ptr<NftNetfilter>> nf = NftNetfilter::Create();
      Check(nf.status(), "NftNetfilter::Create");
      Check((*nf)->Prepare().status(), "Prepare");
      Check((*nf)->ApplyAll(subjects), "ApplyAll");
      ours_startup.push_back(NowUs() - start);
      start = NowUs();
      Check((*nf)->Apply(MakeSubject(added_uid, 18500, false, {*engine::ParseIpAddress(kResolver)})),
            "Apply");
      ours_add.push_back(NowUs() - start);
      start = NowUs();
      Check((*nf)->Release(removed_uid), "Release");
      ours_remove.push_back(NowUs() - start);
      absl::StatusOr<std::vector<uint32_t>> listed = (*nf)->ListSubjects();
      Check(listed.status(), "ListSubjects");
      if (listed->size() != static_cast<size_t>(kSubjects)) Die("wrong subject count after run");
    }
  }
  std::printf("nft applier, %d subjects, median of %d runs, each in a fresh namespace\n",
              kSubjects, repetitions);
  std::printf("%-34s %12s %12s %8s\n", "operation", "in-process", "nft -f", "ratio");
  const auto row = [](const char* name, const std::vector<double>& ours,
                      const std::vector<double>& nft) {
    std::printf("%-34s %9.2f ms %9.2f ms %7.1fx\n", name, Median(ours) / 1000,
                Median(nft) / 1000, Median(nft) / Median(ours));
  };
  row("startup: 1,000 subjects", ours_startup, nft_startup);
  row("one subject added to 1,000", ours_add, nft_add);
  row("one subject removed from 1,000", ours_remove, nft_remove);
  std::printf("(ratio: nft -f time / in-process time; higher is better)\n\n");

  // Connect cost.
  const uint32_t first = kFirstUid;
  const uint32_t last = kFirstUid + kSubjects - 1;
  std::map<uint32_t, ConnectFigures> one, vmap, linear;
  {
    Fresh fresh = FreshNamespace(true);
    absl::StatusOr<std::unique_ptr<NftNetfilter>> nf = NftNetfilter::Create();
    Check(nf.status(), "create");
    Check((*nf)->Prepare().status(), "Prepare");
    Check((*nf)->Apply(subjects.front()), "Apply");
    AcceptTimer timer({PortOf(0)});
    one = MeasureConnects(timer, {first}, connects);
  }
  {
    Fresh fresh = FreshNamespace(true);
    absl::StatusOr<std::unique_ptr<NftNetfilter>> nf = NftNetfilter::Create();
    Check(nf.status(), "create");
    Check((*nf)->Prepare().status(), "Prepare");
    Check((*nf)->ApplyAll(subjects), "ApplyAll");
    AcceptTimer timer({PortOf(0), PortOf(kSubjects - 1)});
    vmap = MeasureConnects(timer, {first, last}, connects);
  }
  {
    Fresh fresh = FreshNamespace(true);
    TimeNftFile(linear_file);
    AcceptTimer timer({PortOf(0), PortOf(kSubjects - 1)});
    linear = MeasureConnects(timer, {first, last}, connects);
  }
  std::printf("connect to accept through the redirect, %d connections per case (µs)\n",
              connects);
  std::printf("%-44s %8s %8s\n", "case", "p50", "p99");
  const auto line = [](const std::string& name, const ConnectFigures& f) {
    std::printf("%-44s %8.1f %8.1f\n", name.c_str(), f.p50, f.p99);
  };
  line("vmap, 1 agent", one[first]);
  line("vmap, 1,000 agents, 1st UID", vmap[first]);
  line("vmap, 1,000 agents, 1,000th UID", vmap[last]);
  line("linear jumps, 1,000 agents, 1st UID", linear[first]);
  line("linear jumps, 1,000 agents, 1,000th UID", linear[last]);
  std::printf("vmap 1,000th / 1st (p50): %.2f   vmap 1,000th / 1 agent (p50): %.2f   "
              "linear 1,000th / 1st (p50): %.2f\n",
              vmap[last].p50 / vmap[first].p50, vmap[last].p50 / one[first].p50,
              linear[last].p50 / linear[first].p50);
  for (const std::string& f : {startup_file, add_file, remove_file, linear_file}) {
    unlink(f.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace leash

int main(int argc, char** argv) { return leash::Main(argc, argv); }
