// The agent's side of the decision stream under load, run as a test agent account by
// decision_stream_sidecars_test and decision_stream_sidecars_benchmark. On a schedule (each
// operation due at its own time from the start, so a slow answer shows as lag, not as a lower
// rate), for --seconds:
//   - opens of a file its policy denies (--open): each one a fanotify permission event leash-fswatch
//     answers, and a block line in the decision log;
//   - TCP connections to an address its policy denies (--connect, ports cycling over --ports):
//     each one redirected to leash-proxy, judged on the address once the agent has shut its
//     side down, and reset, and a block line. Spread over --connect-threads, each with its own
//     share of the rate, since a connection waits for its answer.
// --open-rate=0 opens as fast as one thread can instead (throughput). Prints one line of
// key=value fields: what each operation got back, latency percentiles in microseconds, and how
// far behind its schedule the agent ended. An operation unanswered for 10 s is counted as such
// (a connection) or never returns (an open: the caller's timeout sees it).
//
//   decision_load_agent --open=PATH --open-rate=N [--connect=IPV4 --ports=A-B --connect-rate=M
//       --connect-threads=K] --seconds=S
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace {

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void SleepUntil(int64_t due_ns) {
  const int64_t now = NowNs();
  if (due_ns <= now) return;
  const int64_t wait = due_ns - now;
  timespec ts{static_cast<time_t>(wait / 1'000'000'000), static_cast<long>(wait % 1'000'000'000)};
  nanosleep(&ts, nullptr);
}

double Percentile(std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t at = std::min(sorted.size() - 1, static_cast<size_t>(p * (sorted.size() - 1) + 0.5));
  return sorted[at];
}

struct Options {
  std::string open_path;
  int open_rate = 0;  // 0: as fast as one thread can
  std::string connect_ip;
  int port_low = 0, port_high = 0;
  int connect_rate = 0;
  int connect_threads = 8;
  double seconds = 10;
};

struct Opens {
  long refused = 0, opened = 0, other = 0;
  std::vector<double> micros;
};

Opens RunOpens(const Options& options, int64_t start) {
  Opens result;
  const int64_t end = start + static_cast<int64_t>(options.seconds * 1e9);
  const long total = static_cast<long>(options.open_rate * options.seconds);
  result.micros.reserve(options.open_rate > 0 ? total : 1 << 20);
  for (long i = 0;; ++i) {
    if (options.open_rate > 0) {
      if (i >= total) break;
      SleepUntil(start + static_cast<int64_t>(i * 1e9 / options.open_rate));
    } else if ((i & 255) == 0 && NowNs() >= end) {
      break;
    }
    const int64_t t0 = NowNs();
    const int fd = open(options.open_path.c_str(), O_RDONLY | O_CLOEXEC);
    const int error = errno;
    result.micros.push_back((NowNs() - t0) / 1e3);
    if (fd >= 0) {
      close(fd);
      ++result.opened;
    } else if (error == EACCES || error == EPERM) {
      ++result.refused;
    } else {
      ++result.other;
    }
  }
  return result;
}

struct Connects {
  long reset = 0, eof = 0, data = 0, unanswered = 0, failed = 0;
  int first_failure = 0;
  std::vector<double> micros;
  void Add(const Connects& other) {
    reset += other.reset;
    eof += other.eof;
    data += other.data;
    unanswered += other.unanswered;
    failed += other.failed;
    if (first_failure == 0) first_failure = other.first_failure;
    micros.insert(micros.end(), other.micros.begin(), other.micros.end());
  }
};

// Thread `index` of `threads`: every threads-th connection of the schedule.
Connects RunConnects(const Options& options, int64_t start, int index, int threads) {
  Connects result;
  const long total = static_cast<long>(options.connect_rate * options.seconds);
  const int ports = options.port_high - options.port_low + 1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  inet_pton(AF_INET, options.connect_ip.c_str(), &address.sin_addr);
  const timeval ten_seconds{10, 0};
  for (long i = index; i < total; i += threads) {
    SleepUntil(start + static_cast<int64_t>(i * 1e9 / options.connect_rate));
    address.sin_port = htons(static_cast<uint16_t>(options.port_low + i % ports));
    const int64_t t0 = NowNs();
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      ++result.failed;
      if (result.first_failure == 0) result.first_failure = errno;
      continue;
    }
    // Bounds both the connect and the wait for the proxy's answer.
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &ten_seconds, sizeof(ten_seconds));
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &ten_seconds, sizeof(ten_seconds));
    if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
      ++result.failed;
      if (result.first_failure == 0) result.first_failure = errno;
      close(fd);
      continue;
    }
    // Nothing to read a name from: the proxy decides on the address at once.
    shutdown(fd, SHUT_WR);
    char byte;
    const ssize_t got = recv(fd, &byte, 1, 0);
    const int error = errno;
    result.micros.push_back((NowNs() - t0) / 1e3);
    if (got > 0) {
      ++result.data;
    } else if (got == 0) {
      ++result.eof;
    } else if (error == ECONNRESET) {
      ++result.reset;
    } else if (error == EAGAIN || error == EWOULDBLOCK) {
      ++result.unanswered;
    } else {
      ++result.failed;
      if (result.first_failure == 0) result.first_failure = error;
    }
    close(fd);
  }
  return result;
}

bool ParseFlag(absl::string_view arg, absl::string_view name, absl::string_view& value) {
  return absl::ConsumePrefix(&arg, name) && absl::ConsumePrefix(&arg, "=") && (value = arg, true);
}

bool Parse(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    absl::string_view value;
    const absl::string_view arg = argv[i];
    bool ok = false;
    if (ParseFlag(arg, "--open", value)) {
      options.open_path = std::string(value);
      ok = true;
    } else if (ParseFlag(arg, "--open-rate", value)) {
      ok = absl::SimpleAtoi(value, &options.open_rate) && options.open_rate >= 0;
    } else if (ParseFlag(arg, "--connect", value)) {
      options.connect_ip = std::string(value);
      ok = true;
    } else if (ParseFlag(arg, "--ports", value)) {
      std::vector<absl::string_view> range = absl::StrSplit(value, '-');
      ok = range.size() == 2 && absl::SimpleAtoi(range[0], &options.port_low) &&
           absl::SimpleAtoi(range[1], &options.port_high) && options.port_low > 0 &&
           options.port_high >= options.port_low && options.port_high < 65536;
    } else if (ParseFlag(arg, "--connect-rate", value)) {
      ok = absl::SimpleAtoi(value, &options.connect_rate) && options.connect_rate >= 0;
    } else if (ParseFlag(arg, "--connect-threads", value)) {
      ok = absl::SimpleAtoi(value, &options.connect_threads) && options.connect_threads > 0;
    } else if (ParseFlag(arg, "--seconds", value)) {
      ok = absl::SimpleAtod(value, &options.seconds) && options.seconds > 0;
    }
    if (!ok) {
      fprintf(stderr, "decision_load_agent: bad argument %s\n", argv[i]);
      return false;
    }
  }
  if (options.open_path.empty()) {
    fprintf(stderr, "decision_load_agent: --open is required\n");
    return false;
  }
  if (options.connect_rate > 0 && (options.connect_ip.empty() || options.port_low == 0)) {
    fprintf(stderr, "decision_load_agent: --connect-rate needs --connect and --ports\n");
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!Parse(argc, argv, options)) return 2;
  const int64_t start = NowNs() + 10'000'000;  // every thread started first
  std::vector<Connects> per_thread(options.connect_rate > 0 ? options.connect_threads : 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < per_thread.size(); ++t) {
    threads.emplace_back([&, t] {
      per_thread[t] = RunConnects(options, start, static_cast<int>(t),
                                  static_cast<int>(per_thread.size()));
    });
  }
  Opens opens = RunOpens(options, start);
  const double open_seconds = (NowNs() - start) / 1e9;
  for (std::thread& thread : threads) thread.join();
  const double elapsed = (NowNs() - start) / 1e9;
  Connects connects;
  for (const Connects& c : per_thread) connects.Add(c);
  std::sort(opens.micros.begin(), opens.micros.end());
  std::sort(connects.micros.begin(), connects.micros.end());
  printf("opens=%zu refused=%ld opened=%ld open_errors=%ld open_per_s=%.0f open_p50_us=%.1f "
         "open_p99_us=%.1f open_max_us=%.0f connects=%ld reset=%ld eof=%ld data=%ld "
         "unanswered=%ld connect_failed=%ld first_errno=%d connect_p50_us=%.1f "
         "connect_p99_us=%.1f connect_max_us=%.0f elapsed_s=%.3f lag_s=%.3f\n",
         opens.micros.size(), opens.refused, opens.opened, opens.other,
         opens.micros.size() / open_seconds, Percentile(opens.micros, 0.5),
         Percentile(opens.micros, 0.99), Percentile(opens.micros, 1.0),
         connects.reset + connects.eof + connects.data + connects.unanswered, connects.reset,
         connects.eof, connects.data, connects.unanswered, connects.failed,
         connects.first_failure, Percentile(connects.micros, 0.5),
         Percentile(connects.micros, 0.99), Percentile(connects.micros, 1.0), elapsed,
         elapsed - options.seconds);
  return 0;
}
