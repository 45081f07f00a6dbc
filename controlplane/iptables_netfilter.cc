#include "controlplane/iptables_netfilter.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "controlplane/route_rules.h"
#include "base/status_macros.h"

namespace leash::controlplane {
namespace {

constexpr char kCommentPrefix[] = "leash-agent-";
// A UID the fallback cannot enforce (it enforces one), whose network is closed instead.
constexpr char kClosedPrefix[] = "leash-closed-";
constexpr char kGuardComment[] = "leash-guard";
constexpr char kInboundMarkComment[] = "leash-inbound-mark";
// The conntrack label of a refused inbound connection: the one the nftables rules use
// (nft::kInboundLabelBit); labels are the kernel's, shared by both.
constexpr int kInboundLabel = 127;
// iptables may wait for the xtables lock; never longer than this in all.
constexpr absl::Duration kCommandTimeout = absl::Seconds(20);
constexpr char kLockWaitSeconds[] = "5";

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs argv[0] (an absolute path) in the network namespace `netns_fd`, feeding it `input`.
// fork + setns + execv rather than posix_spawn, because the child must enter the namespace
// before exec; only async-signal-safe calls run in the child.
absl::StatusOr<CommandResult> RunIn(int netns_fd, const std::vector<std::string>& argv,
                                    const std::string& input) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  char* const env[] = {const_cast<char*>("PATH=/usr/sbin:/usr/bin:/sbin:/bin"),
                       const_cast<char*>("LC_ALL=C"), nullptr};
  int in_pipe[2];
  int out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0) return absl::ErrnoToStatus(errno, "pipe2");
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    const int error = errno;
    close(in_pipe[0]);
    close(in_pipe[1]);
    return absl::ErrnoToStatus(error, "pipe2");
  }
  const pid_t pid = fork();
  if (pid < 0) {
    const int error = errno;
    for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1]}) close(fd);
    return absl::ErrnoToStatus(error, "fork");
  }
  if (pid == 0) {
    if (setns(netns_fd, CLONE_NEWNET) != 0) _exit(126);
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(out_pipe[1], 2);
    execve(args[0], args.data(), env);
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  // The scripts are a few hundred bytes: well inside a pipe's buffer, so writing before
  // reading cannot deadlock.
  size_t written = 0;
  while (written < input.size()) {
    const ssize_t n = write(in_pipe[1], input.data() + written, input.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  close(in_pipe[1]);
  CommandResult result;
  const absl::Time deadline = absl::Now() + kCommandTimeout;
  bool timed_out = false;
  char buffer[4096];
  while (true) {
    const int64_t left_ms = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (left_ms <= 0) {
      timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    pollfd p{out_pipe[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<int64_t>(left_ms, 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const ssize_t n = read(out_pipe[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    result.output.append(buffer, static_cast<size_t>(n));
  }
  close(out_pipe[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return absl::DeadlineExceededError(absl::StrCat("`", absl::StrJoin(argv, " "),
                                                    "` did not finish within ",
                                                    absl::FormatDuration(kCommandTimeout)));
  }
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
    if (result.exit_code == 126) {
      return absl::InternalError(absl::StrCat("could not enter the network namespace to run ",
                                              argv[0]));
    }
    if (result.exit_code == 127) {
      return absl::UnavailableError(absl::StrCat("could not run ", argv[0]));
    }
  }
  return result;
}

// The uid in a <prefix><uid> comment token (quotes allowed), if it is one.
std::optional<uint32_t> CommentUid(absl::string_view token, absl::string_view prefix) {
  absl::ConsumePrefix(&token, "\"");
  absl::ConsumeSuffix(&token, "\"");
  if (!absl::ConsumePrefix(&token, prefix) || token.empty()) return std::nullopt;
  for (char c : token) {
    if (!absl::ascii_isdigit(c)) return std::nullopt;
  }
  uint32_t uid = 0;
  if (!absl::SimpleAtoi(token, &uid) || absl::StrCat(uid) != token) return std::nullopt;
  return uid;
}

// The packet count of a line saved with -c ("[12:3456] -A OUTPUT ..."), which is consumed
// from `line`; nullopt (and `line` untouched) when it has none.
std::optional<uint64_t> ConsumeCounters(absl::string_view& line) {
  if (!absl::StartsWith(line, "[")) return std::nullopt;
  const size_t colon = line.find(':');
  const size_t close = line.find("] ");
  uint64_t packets = 0;
  if (colon == absl::string_view::npos || close == absl::string_view::npos || colon > close ||
      !absl::SimpleAtoi(line.substr(1, colon - 1), &packets)) {
    return std::nullopt;
  }
  line.remove_prefix(close + 2);
  return packets;
}

// The UID a saved `-A OUTPUT ...` line belongs to, if it is a leash rule of that kind
// (kCommentPrefix: a subject's; kClosedPrefix: a closed UID's).
std::optional<uint32_t> LineUid(absl::string_view line,
                                absl::string_view prefix = kCommentPrefix) {
  ConsumeCounters(line);
  if (!absl::StartsWith(line, "-A OUTPUT ")) return std::nullopt;
  const std::vector<absl::string_view> tokens =
      absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  for (size_t i = 0; i + 1 < tokens.size(); ++i) {
    if (tokens[i] == "--comment") return CommentUid(tokens[i + 1], prefix);
  }
  return std::nullopt;
}

}  // namespace

std::string DefaultIptablesCommand() {
  constexpr char kLegacy[] = "/usr/sbin/iptables-legacy";
  if (access(kLegacy, X_OK) == 0) return kLegacy;
  return "/usr/sbin/iptables";
}

std::vector<uint32_t> ParseIptablesUids(absl::string_view save_output) {
  std::set<uint32_t> uids;
  for (absl::string_view line : absl::StrSplit(save_output, '\n')) {
    if (std::optional<uint32_t> uid = LineUid(absl::StripAsciiWhitespace(line))) {
      uids.insert(*uid);
    }
  }
  return std::vector<uint32_t>(uids.begin(), uids.end());
}

std::vector<uint32_t> ParseIptablesClosedUids(absl::string_view save_output) {
  std::set<uint32_t> uids;
  for (absl::string_view line : absl::StrSplit(save_output, '\n')) {
    if (std::optional<uint32_t> uid =
            LineUid(absl::StripAsciiWhitespace(line), kClosedPrefix)) {
      uids.insert(*uid);
    }
  }
  return std::vector<uint32_t>(uids.begin(), uids.end());
}

std::string IptablesClosedLine(uint32_t uid) {
  // Every protocol, loopback included: the UID is not enforced at all, so nothing of its is
  // judged, and a refusal (ECONNREFUSED at once) rather than a drop says so to the agent.
  return absl::StrCat("-A OUTPUT -m owner --uid-owner ", uid, " -m comment --comment ",
                      kClosedPrefix, uid, " -j REJECT --reject-with icmp-port-unreachable");
}

std::vector<std::string> IptablesDeleteLines(absl::string_view save_output, uint32_t uid) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(save_output, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    ConsumeCounters(line);
    std::optional<uint32_t> owner = LineUid(line);
    if (!owner.has_value()) owner = LineUid(line, kClosedPrefix);
    if (!owner.has_value() || *owner != uid) continue;
    // The rule exactly as iptables printed it, as a deletion.
    absl::ConsumePrefix(&line, "-A ");
    out.push_back(absl::StrCat("-D ", line));
  }
  return out;
}

std::vector<std::string> IptablesAddLines(const NetfilterSubject& subject) {
  const std::string comment = absl::StrCat("-m comment --comment ", kCommentPrefix, subject.uid);
  std::vector<std::string> lines;
  // The subject's UID and each subordinate range: xt_owner matches a range of UIDs, and every
  // line carries the subject's comment, so a release finds them all.
  for (const engine::UidRange& uids : DispatchedUids(subject)) {
    const std::string owner = absl::StrCat("-m owner --uid-owner ", engine::FormatUidRange(uids));
    // Port 53 of loopback is no local service to exempt: under network.dns: filter the proxy
    // takes TCP DNS to any loopback address for the subject's filter, as the nftables chain
    // does (docs/ARCHITECTURE.md, rule N15); under network.dns: resolvers only the subject's
    // own loopback resolvers are reached directly, and the proxy judges the rest.
    if (!subject.dns_filter) {
      for (const engine::IpAddress& raw : subject.dns_resolvers) {
        const engine::IpAddress resolver = engine::UnmapV4(raw);
        if (resolver.family != engine::IpAddress::Family::kV4 ||
            !engine::IsLoopbackAddress(resolver)) {
          continue;
        }
        const std::string line =
            absl::StrCat("-A OUTPUT -d ", engine::FormatIpAddress(resolver), "/32 -p tcp ", owner,
                         " -m tcp --dport 53 ", comment, " -j RETURN");
        if (std::find(lines.begin(), lines.end(), line) == lines.end()) lines.push_back(line);
      }
    }
    lines.push_back(absl::StrCat("-A OUTPUT -d 127.0.0.0/8 -p tcp ", owner,
                                 " -m multiport ! --dports 53,", kProxyPortFirst, ":",
                                 kProxyPortLast, " ", comment, " -j RETURN"));
    lines.push_back(absl::StrCat("-A OUTPUT -p tcp ", owner, " ", comment,
                                 " -j REDIRECT --to-ports ", subject.port));
  }
  return lines;
}

std::vector<std::string> IptablesFilterAddLines(const NetfilterSubject& subject) {
  const std::string owner = absl::StrCat("-m owner --uid-owner ", subject.uid);
  const std::string comment = absl::StrCat("-m comment --comment ", kCommentPrefix, subject.uid);
  std::vector<std::string> lines;
  // The destination's type, not `! -o lo`: the output interface filter OUTPUT sees is the one
  // routed before nat OUTPUT's redirect re-routed the packet to loopback.
  const std::string off_host = "-m addrtype ! --dst-type LOCAL";
  if (!subject.inbound_allowed) {
    // Labels the refused connection for the guard rule (IptablesGuardLine).
    lines.push_back(absl::StrCat("-A OUTPUT ", owner, " -m conntrack --ctdir REPLY ", off_host,
                                 " -m connlabel --label ", kInboundLabel, " --set ", comment,
                                 " -j DROP"));
  }
  lines.push_back(absl::StrCat("-A OUTPUT -p tcp ", owner, " -m conntrack --ctdir ORIGINAL ",
                               off_host, " ", comment, " -j DROP"));
  // --ctdir matches nothing without a conntrack entry, so those are named on their own.
  lines.push_back(absl::StrCat("-A OUTPUT -p tcp ", owner,
                               " -m conntrack --ctstate INVALID,UNTRACKED ", off_host, " ",
                               comment, " -j DROP"));
  return lines;
}

std::string IptablesGuardLine() {
  // Only packets without a live socket (a closed one, or none): the guard sits before every
  // subject's rules in the chain, and a subject's own answers are counted under its UID.
  return absl::StrCat("-A OUTPUT -m owner ! --socket-exists -m conntrack --ctdir REPLY -m "
                      "connlabel --label ", kInboundLabel,
                      " -m addrtype ! --dst-type LOCAL -m comment --comment ", kGuardComment,
                      " -j DROP");
}

bool HasIptablesGuard(absl::string_view save_output) {
  for (absl::string_view line : absl::StrSplit(save_output, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    ConsumeCounters(line);
    if (absl::StartsWith(line, "-A OUTPUT ") &&
        absl::StrContains(line, absl::StrCat("--comment ", kGuardComment, " ")) &&
        absl::StrContains(line, "--ctdir REPLY") && absl::StrContains(line, "--label") &&
        absl::EndsWith(line, "-j DROP")) {
      return true;
    }
  }
  return false;
}

std::string IptablesInboundMarkLine() {
  // The nftables guard's prerouting chain (nft_ruleset.h: kGuardMarkChain), for policy routing.
  return absl::StrCat("-A PREROUTING -p tcp ! -i lo -m comment --comment ", kInboundMarkComment,
                      " -j MARK --or-mark 0x", absl::Hex(kInboundMark));
}

bool HasIptablesInboundMark(absl::string_view save_output) {
  for (absl::string_view line : absl::StrSplit(save_output, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    ConsumeCounters(line);
    // As iptables-save prints it: `! -i lo -p tcp ... -j MARK --set-xmark 0x1000000/0x1000000`.
    if (absl::StartsWith(line, "-A PREROUTING ") &&
        absl::StrContains(line, absl::StrCat("--comment ", kInboundMarkComment, " ")) &&
        absl::EndsWith(line, absl::StrCat("-j MARK --set-xmark 0x", absl::Hex(kInboundMark), "/0x",
                                          absl::Hex(kInboundMark)))) {
      return true;
    }
  }
  return false;
}

std::string IptablesRestoreScript(const std::vector<std::string>& lines,
                                  absl::string_view table) {
  return absl::StrCat("*", table, "\n", absl::StrJoin(lines, "\n"), lines.empty() ? "" : "\n",
                      "COMMIT\n");
}

absl::StatusOr<NetfilterCounters> IptablesCounters(absl::string_view save_output, uint32_t uid) {
  NetfilterCounters counters;
  bool found = false;
  for (absl::string_view line : absl::StrSplit(save_output, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    const std::optional<uint32_t> owner = LineUid(line);
    if (!owner.has_value() || *owner != uid) continue;
    found = true;
    const std::optional<uint64_t> packets = ConsumeCounters(line);
    if (!packets.has_value() || !absl::EndsWith(line, "-j DROP")) continue;
    (absl::StrContains(line, "--ctdir REPLY") ? counters.inbound_dropped_packets
                                              : counters.unproxied_dropped_packets) += *packets;
  }
  if (!found) {
    return absl::NotFoundError(absl::StrCat("UID ", uid, " has no leash rule in filter OUTPUT"));
  }
  return counters;
}

absl::StatusOr<std::unique_ptr<IptablesNetfilter>> IptablesNetfilter::Create(
    std::string iptables) {
  if (iptables.empty()) iptables = DefaultIptablesCommand();
  for (const std::string& path : {iptables + "-save", iptables + "-restore"}) {
    if (access(path.c_str(), X_OK) != 0) {
      return absl::UnavailableError(absl::StrCat(
          "the iptables fallback needs ", path, " (", std::strerror(errno),
          "); install the Debian package iptables"));
    }
  }
  const int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::ErrnoToStatus(errno, "open /proc/thread-self/ns/net");
  return std::unique_ptr<IptablesNetfilter>(new IptablesNetfilter(std::move(iptables), fd));
}

IptablesNetfilter::~IptablesNetfilter() { close(netns_fd_); }

absl::StatusOr<std::string> IptablesNetfilter::Save(absl::string_view table, bool counters) {
  std::vector<std::string> argv = {iptables_ + "-save", "-t", std::string(table)};
  if (counters) argv.push_back("-c");
  ASSIGN_OR_RETURN(CommandResult result, RunIn(netns_fd_, argv, ""));
  if (result.exit_code != 0) {
    return absl::UnavailableError(absl::StrCat("`", absl::StrJoin(argv, " "), "` exited ",
                                               result.exit_code, ": ", result.output));
  }
  return result.output;
}

absl::Status IptablesNetfilter::Restore(const std::string& script) {
  const std::vector<std::string> argv = {iptables_ + "-restore", "--noflush", "-w",
                                         kLockWaitSeconds};
  ASSIGN_OR_RETURN(CommandResult result, RunIn(netns_fd_, argv, script));
  if (result.exit_code != 0) {
    return absl::InternalError(absl::StrCat("`", absl::StrJoin(argv, " "), "` exited ",
                                            result.exit_code, " on\n", script, result.output));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> IptablesNetfilter::Prepare() {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Save("nat").status());
  ASSIGN_OR_RETURN(const std::string saved_filter, Save("filter"));
  // The guard (what a closed socket still sends on a refused connection) is every UID's and
  // no UID's: added once, never removed, like the nftables guard table.
  if (!HasIptablesGuard(saved_filter)) {
    RETURN_IF_ERROR(Restore(IptablesRestoreScript({IptablesGuardLine()}, "filter")));
  }
  // The mark policy routing refuses a leashed listener's answers by (route_rules.h), IPv4.
  ASSIGN_OR_RETURN(const std::string saved_mangle, Save("mangle"));
  if (!HasIptablesInboundMark(saved_mangle)) {
    RETURN_IF_ERROR(Restore(IptablesRestoreScript({IptablesInboundMarkLine()}, "mangle")));
  }
  return std::vector<std::string>{};
}

absl::Status IptablesNetfilter::Apply(const NetfilterSubject& subject) {
  RETURN_IF_ERROR(ValidateNetfilterSubject(subject));
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(const std::string saved, Save("nat"));
  ASSIGN_OR_RETURN(const std::string saved_filter, Save("filter"));
  for (uint32_t uid : ParseIptablesUids(absl::StrCat(saved, saved_filter))) {
    if (uid != subject.uid) {
      return absl::FailedPreconditionError(absl::StrCat(
          "enforcing several UIDs needs nftables: the iptables fallback appends into the "
          "built-in nat OUTPUT chain, which cannot express a per-UID dispatch, and UID ", uid,
          " is already enforced here, so UID ", subject.uid,
          " is refused rather than given another subject's rules. Make nf_tables available "
          "(modprobe nf_tables) or leash a single account."));
    }
  }
  std::vector<std::string> lines = IptablesDeleteLines(saved, subject.uid);
  for (std::string& line : IptablesAddLines(subject)) lines.push_back(std::move(line));
  std::vector<std::string> filter_lines = IptablesDeleteLines(saved_filter, subject.uid);
  for (std::string& line : IptablesFilterAddLines(subject)) {
    filter_lines.push_back(std::move(line));
  }
  return Restore(absl::StrCat(IptablesRestoreScript(lines),
                              IptablesRestoreScript(filter_lines, "filter")));
}

absl::Status IptablesNetfilter::ApplyAll(const std::vector<NetfilterSubject>& subjects) {
  std::set<uint32_t> uids;
  for (const NetfilterSubject& subject : subjects) uids.insert(subject.uid);
  if (uids.size() > 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "enforcing several UIDs needs nftables: ", uids.size(),
        " subjects were given, and the iptables fallback appends into the built-in nat OUTPUT "
        "chain, which cannot express a per-UID dispatch. Make nf_tables available (modprobe "
        "nf_tables) or leash a single account."));
  }
  if (subjects.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("UID ", subjects.front().uid, " appears twice in one ApplyAll"));
  }
  if (subjects.empty()) return absl::OkStatus();
  return Apply(subjects.front());
}

absl::Status IptablesNetfilter::Release(uint32_t uid) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(const std::string saved, Save("nat"));
  ASSIGN_OR_RETURN(const std::string saved_filter, Save("filter"));
  const std::vector<std::string> lines = IptablesDeleteLines(saved, uid);
  const std::vector<std::string> filter_lines = IptablesDeleteLines(saved_filter, uid);
  if (lines.empty() && filter_lines.empty()) return absl::OkStatus();
  return Restore(absl::StrCat(IptablesRestoreScript(lines),
                              IptablesRestoreScript(filter_lines, "filter")));
}

absl::StatusOr<NetfilterCounters> IptablesNetfilter::ReadCounters(uint32_t uid) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(const std::string saved, Save("filter", /*counters=*/true));
  return IptablesCounters(saved, uid);
}

absl::StatusOr<std::vector<uint32_t>> IptablesNetfilter::ListSubjects() {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(const std::string saved, Save("nat"));
  ASSIGN_OR_RETURN(const std::string saved_filter, Save("filter"));
  std::set<uint32_t> uids;
  for (uint32_t uid : ParseIptablesUids(absl::StrCat(saved, saved_filter))) uids.insert(uid);
  for (uint32_t uid : ParseIptablesClosedUids(saved_filter)) uids.insert(uid);
  return std::vector<uint32_t>(uids.begin(), uids.end());
}

absl::StatusOr<std::vector<uint32_t>> IptablesNetfilter::ListClosed() {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(const std::string saved_filter, Save("filter"));
  return ParseIptablesClosedUids(saved_filter);
}

absl::Status IptablesNetfilter::Close(uint32_t uid) {
  if (uid == 0) {
    return absl::InvalidArgumentError(
        "UID 0 cannot be closed: leashd's and the proxy's own connections run as root");
  }
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(const std::string saved_filter, Save("filter"));
  const std::vector<uint32_t> closed = ParseIptablesClosedUids(saved_filter);
  if (std::find(closed.begin(), closed.end(), uid) != closed.end()) return absl::OkStatus();
  return Restore(IptablesRestoreScript({IptablesClosedLine(uid)}, "filter"));
}

}  // namespace leash::controlplane
