// A subordinate range, end to end: the real leashd and leash-fswatch, a real agent account, the
// real newuidmap (setuid root) and /etc/subuid as leashd's mount namespace sees it (the test's
// account view, an overlay no other run shares). An agent process makes a user namespace, has
// newuidmap map a host UID of a range into it, becomes that UID and connects to a server that
// answers "ESCAPED" to anyone who reaches it: a confined UID is redirected to its proxy instead.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/root_fixture.h"
#include "test/leashd/leashd_fixture.h"

namespace leash::testing {
namespace {

constexpr char kServerAddress[] = "192.0.2.254";
constexpr int kServerPort = 8099;

// As the agent: forks a child into a new user namespace and has newuidmap map host UID argv[1]
// to the child's 0, again and again until newuidmap succeeds; the child then becomes that UID
// and connects at once. Prints SPINNING after the first refusal, then MAPPED <time> and RESULT
// ESCAPED|BLOCKED. Gives up (GAVEUP) after 30 s.
constexpr char kMappingLoop[] = R"py(
import ctypes, os, socket, subprocess, sys, time
first, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
libc = ctypes.CDLL(None, use_errno=True)
start = time.monotonic()
tries = 0
while True:
    go_r, go_w = os.pipe()
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(go_w); os.close(ready_r)
        if libc.unshare(0x10000000) != 0:
            os._exit(3)
        os.write(ready_w, b"u")
        if os.read(go_r, 1) != b"g":
            os._exit(0)
        os.setresuid(0, 0, 0)
        s = socket.socket()
        s.settimeout(10)
        try:
            s.connect((host, port))
            s.sendall(b"GET / HTTP/1.0\r\nHost: blocked.example\r\n\r\n")
            data = s.recv(64)
        except Exception as e:
            data = repr(e).encode()
        print("RESULT", "ESCAPED" if data.startswith(b"ESCAPED") else "BLOCKED", flush=True)
        os._exit(0)
    os.close(go_r); os.close(ready_w)
    os.read(ready_r, 1)
    rc = subprocess.call(["newuidmap", str(pid), "0", first, "1"], stderr=subprocess.DEVNULL)
    if rc == 0:
        print("MAPPED", "%.6f" % time.time(), flush=True)
    os.write(go_w, b"g" if rc == 0 else b"n")
    os.waitpid(pid, 0)
    os.close(go_w); os.close(ready_r)
    tries += 1
    if tries == 1 and rc != 0:
        print("SPINNING", flush=True)
    if rc == 0:
        break
    if time.monotonic() - start > 30:
        print("GAVEUP", flush=True)
        break
)py";

constexpr char kServer[] = R"py(
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(64)
print("LISTENING", flush=True)
while True:
    c, _ = s.accept()
    try:
        c.sendall(b"ESCAPED\n")
    except Exception:
        pass
    c.close()
)py";

struct RunOutcome {
  int escaped = 0;
  int blocked = 0;
  int unmapped = 0;  // newuidmap never succeeded
  std::vector<double> mapped_after_ms;  // from the edit to newuidmap's success
  std::string log;
};

class SubordinateRangesTest : public RootTest {
 protected:
  void SetUp() override {
    RootTest::SetUp();
    if (!Ready()) return;
    ASSERT_NE(MountTmpfs(), nullptr);
    ASSERT_NE(MakeAccountView(), nullptr);
    user_ = AddAccount(UniqueAccountName("lsr-user"));
    ASSERT_NE(user_, nullptr);
    agent_ = AddAccount(UniqueAccountName("leash-sr"), "leash-it-sr");
    ASSERT_NE(agent_, nullptr);
    ASSERT_NE(MakeFiles("lsr"), nullptr);
    chmod(files_->path().c_str(), 0755);
    std::ofstream(files_->Join("map_loop.py")) << kMappingLoop;
    std::ofstream(files_->Join("server.py")) << kServer;
    chmod(files_->Join("map_loop.py").c_str(), 0644);
    const std::string floor = absl::StrCat(
        "user: ", user_->name(), "\nfail_mode: closed\n",
        "network: { mode: whitelist, allow: [\"floor.example\"], deny: [] }\n",
        "filesystem: { mode: blacklist, allow: [], deny: [\"", fs_->path(), "/secret\"] }\n",
        "commands: { mode: blacklist, allow: [], deny: [] }\n",
        "tools: { mode: whitelist, allow: [\"read_file\"], deny: [] }\n",
        "logging: { level: info, decisions: ", files_->Join("decisions.jsonl"), " }\n");
    auto leashd = LeashdInstance::Start(floor, *ns_, fs_->path(), {}, view_.get());
    ASSERT_TRUE(leashd.ok()) << leashd.status();
    leashd_ = *std::move(leashd);
    auto status = leashd_->Status();
    ASSERT_TRUE(status.ok()) << status.status();
    bool enforced = false;
    for (const auto& s : status->subjects()) enforced |= s.account() == "leash-it-sr" && s.state() == "enforced";
    ASSERT_TRUE(enforced) << status->DebugString();
    // The server: on an address of the namespace that is not loopback.
    for (const std::vector<std::string>& step :
         {std::vector<std::string>{"ip", "link", "add", "lsr0", "type", "veth", "peer", "name", "lsr1"},
          std::vector<std::string>{"ip", "addr", "add", absl::StrCat(kServerAddress, "/24"), "dev", "lsr0"},
          std::vector<std::string>{"ip", "link", "set", "lsr1", "up"},
          std::vector<std::string>{"ip", "link", "set", "lsr0", "up"}}) {
      auto done = ns_->Run(step);
      ASSERT_TRUE(done.ok() && done->exit_code == 0)
          << absl::StrJoin(step, " ") << ": " << (done.ok() ? done->out : done.status().ToString());
    }
  }

  // Per line of `lines`: the mapping loop runs as the agent for the UID `firsts[i]`, and once
  // it spins (newuidmap refusing), the line is added to /etc/subuid as usermod adds one (a new
  // file renamed over the old). With `race` false the line goes in first and the loop after.
  RunOutcome AddAndMap(const std::vector<std::string>& lines, const std::vector<uint32_t>& firsts,
                       bool race) {
    std::string script = absl::StrCat(
        "set -u\n",
        // Each program's output comes through a FIFO the script reads line by line, so it
        // goes on at the line it waits for, not after a poll.
        "until_line() {  # until_line <fd> <file> <pattern>: copy lines to <file> up to a match\n",
        "  while IFS= read -r l <&\"$1\"; do printf '%s\\n' \"$l\" >> \"$2\";",
        " [[ $l =~ $3 ]] && return 0; done; return 1\n}\n",
        "mkfifo ", files_->Join("server.fifo"), "\n",
        "python3 ", files_->Join("server.py"), " ", kServerAddress, " ", kServerPort,
        " > ", files_->Join("server.fifo"), " 2>&1 &\nserver=$!\n",
        "exec {s}<", files_->Join("server.fifo"), "\n",
        "until_line $s ", files_->Join("server.out"), " '^LISTENING'\n",
        "cat <&$s >> ", files_->Join("server.out"), " &\n");
    auto add = [](const std::string& line) {
      return absl::StrCat("echo EDITED $(date +%s.%N) && cp -p /etc/subuid /etc/subuid+ && echo '", line,
                          "' >> /etc/subuid+ && mv /etc/subuid+ /etc/subuid\n");
    };
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::string out = files_->Join(absl::StrCat("run", i, ".out"));
      // The mapping loop as the agent, its output to `to`.
      auto loop = [&](const std::string& to) {
        return absl::StrCat("setpriv --reuid=", agent_->uid(), " --regid=", agent_->gid(),
                            " --clear-groups -- python3 ", files_->Join("map_loop.py"), " ",
                            firsts[i], " ", kServerAddress, " ", kServerPort, " > ", to, " 2>&1");
      };
      absl::StrAppend(&script, "echo RUN ", i, "\n");
      if (race) {
        const std::string fifo = files_->Join(absl::StrCat("run", i, ".fifo"));
        absl::StrAppend(&script, "mkfifo ", fifo, "\n",
                        loop(fifo), " &\nloop=$!\n",
                        "exec {r}<", fifo, "\n",
                        "until_line $r ", out, " '^(SPINNING|MAPPED|GAVEUP)'\n", add(lines[i]),
                        "cat <&$r >> ", out, "\nexec {r}<&-\nwait $loop\n");
      } else {
        absl::StrAppend(&script, add(lines[i]), loop(out), "\n");
      }
      absl::StrAppend(&script, "cat ", out, "\n");
    }
    absl::StrAppend(&script, "kill $server\n");
    RunOutcome outcome;
    auto run = ns_->Run(leashd_->InItsMounts({"bash", "-c", script}), absl::Seconds(600));
    if (!run.ok()) {
      ADD_FAILURE() << run.status();
      return outcome;
    }
    outcome.log = run->out;
    double edited = 0;
    bool mapped = false;
    for (absl::string_view line : absl::StrSplit(run->out, '\n')) {
      std::vector<absl::string_view> words = absl::StrSplit(line, ' ');
      if (words[0] == "RUN") {
        if (words[1] != "0" && !mapped) ++outcome.unmapped;
        mapped = false;
      } else if (words[0] == "EDITED" && words.size() > 1) {
        (void)absl::SimpleAtod(words[1], &edited);
      } else if (words[0] == "MAPPED" && words.size() > 1) {
        double at = 0;
        mapped = true;
        if (absl::SimpleAtod(words[1], &at) && race) outcome.mapped_after_ms.push_back((at - edited) * 1000);
      } else if (line == "RESULT ESCAPED") {
        ++outcome.escaped;
      } else if (line == "RESULT BLOCKED") {
        ++outcome.blocked;
      }
    }
    if (!lines.empty() && !mapped) ++outcome.unmapped;
    return outcome;
  }

  // Distinct ranges per test process, far above what useradd hands out.
  uint32_t Base() const { return 3000000000u + static_cast<uint32_t>(getpid() % 100000) * 256; }

  const TestAccount* user_ = nullptr;
  const TestAccount* agent_ = nullptr;
  std::unique_ptr<LeashdInstance> leashd_;
};

// "A subordinate range is confined before anyone can use it": the agent maps the new range the
// moment newuidmap lets it, in a loop racing the edit, and connects from it at once.
TEST_F(SubordinateRangesTest, ASubordinateRangeIsConfinedBeforeAnyoneCanUseIt) {
  constexpr int kRuns = 20;
  std::vector<std::string> lines;
  std::vector<uint32_t> firsts;
  for (int i = 0; i < kRuns; ++i) {
    firsts.push_back(Base() + static_cast<uint32_t>(i));
    lines.push_back(absl::StrCat("leash-it-sr:", firsts.back(), ":1"));
  }
  const RunOutcome outcome = AddAndMap(lines, firsts, /*race=*/true);
  std::vector<double> after = outcome.mapped_after_ms;
  std::sort(after.begin(), after.end());
  std::cout << "subordinate race: " << outcome.escaped << " escaped, " << outcome.blocked
            << " blocked of " << kRuns << " runs; newuidmap succeeded "
            << (after.empty() ? std::string("never")
                              : absl::StrFormat("%.1f / %.1f / %.1f ms (min / median / max)",
                                                after.front(), after[after.size() / 2], after.back()))
            << " after the edit\n";
  EXPECT_EQ(outcome.unmapped, 0) << outcome.log;
  EXPECT_EQ(outcome.escaped, 0) << outcome.log;
  EXPECT_EQ(outcome.blocked, kRuns) << outcome.log;
}

// "Read /etc/subuid the way newuidmap reads it": a range written in hex, in octal, with a
// trailing field, or under the agent's UID as owner is mapped by newuidmap and confined.
TEST_F(SubordinateRangesTest, ARangeIsConfinedInEveryFormNewuidmapReads) {
  const uint32_t base = Base() + 100;
  const std::vector<uint32_t> firsts = {base, base + 16, base + 32, base + 48};
  const std::vector<std::string> lines = {
      absl::StrFormat("leash-it-sr:0x%X:16", firsts[0]),
      absl::StrFormat("leash-it-sr:0%o:16", firsts[1]),
      absl::StrCat("leash-it-sr:", firsts[2], ":16:"),
      absl::StrCat(agent_->uid(), ":", firsts[3], ":16"),
  };
  // Each line in force before the loop runs: leashd's reading, not the hold, is under test.
  for (size_t i = 0; i < lines.size(); ++i) {
    const RunOutcome outcome = AddAndMap({lines[i]}, {firsts[i] + 3}, /*race=*/false);
    EXPECT_EQ(outcome.unmapped, 0) << lines[i] << "\n" << outcome.log;
    EXPECT_EQ(outcome.escaped, 0) << lines[i] << "\n" << outcome.log;
    EXPECT_EQ(outcome.blocked, 1) << lines[i] << "\n" << outcome.log;
  }
  // `leash status` shows the ranges as newuidmap reads them.
  auto status = leashd_->Status();
  ASSERT_TRUE(status.ok());
  std::string shown;
  for (const auto& s : status->subjects()) {
    if (s.account() != "leash-it-sr") continue;
    for (const auto& range : s.subordinate_uids()) absl::StrAppend(&shown, range.first(), "-", range.last(), " ");
  }
  // The four are adjacent: one range once merged.
  EXPECT_THAT(shown, ::testing::HasSubstr(absl::StrCat(firsts.front(), "-", firsts.back() + 15)));
}

}  // namespace
}  // namespace leash::testing
