#include "proxy/proxy_main.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iostream>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "base/command_line.h"
#include "base/exit_codes.h"
#include "proto/sidecar/stop_signals.h"
#include "proto/policystream/policy_subscriber.h"
#include "proxy/event_loop.h"
#include "proxy/held_port_sockets.h"
#include "proxy/host_addresses.h"
#include "proxy/netlink_route_lookup.h"
#include "proxy/listener_manager.h"
#include "proxy/original_dst.h"
#include "proxy/resolver.h"
#include "proxy/socket_owner.h"

ABSL_FLAG(std::string, admin_socket, "/run/leash/leash.sock",
          "leashd's admin socket, where the map comes from (PolicyStream)");
ABSL_FLAG(int64_t, decision_log_fd, -1,
          "the decision log's descriptor, opened and handed over by leashd (required)");
ABSL_FLAG(int64_t, decision_feed_fd, -1,
          "leashd's end of the live decision stream: a datagram socket each logged batch is also "
          "sent on, never waiting (-1: none)");
ABSL_FLAG(absl::Duration, peek_timeout, leash::proxy::ProxyOptions().peek_timeout,
          "how long a connection may take to show its host (TLS SNI, HTTP Host)");
ABSL_FLAG(absl::Duration, connect_timeout, leash::proxy::ProxyOptions().connect_timeout,
          "how long a connection upstream may take");
ABSL_FLAG(int64_t, max_connections,
          static_cast<int64_t>(leash::proxy::ProxyOptions().max_connections),
          "connections the proxy holds at once");
ABSL_FLAG(int64_t, max_connections_per_subject,
          static_cast<int64_t>(leash::proxy::ProxyOptions().max_connections_per_subject),
          "connections one subject may hold at once");
ABSL_FLAG(int64_t, pipe_size, leash::proxy::ProxyOptions().pipe_size,
          "the splice pipes' size in bytes (0: the kernel's)");
ABSL_FLAG(int64_t, resolver_threads, 4, "the resolver's worker threads");
ABSL_FLAG(absl::Duration, resolve_cache_ttl, absl::Seconds(30),
          "how long a resolved name is kept");
ABSL_FLAG(std::string, listen_ipv4, leash::proxy::ProxyOptions().ipv4_address,
          "the IPv4 address the listeners are on (where the chains redirect)");
ABSL_FLAG(std::string, listen_ipv6, leash::proxy::ProxyOptions().ipv6_address,
          "the IPv6 address the listeners are on");
ABSL_FLAG(std::string, port_sockets, "",
          "FIRST-LAST: the listeners' sockets, inherited from leashd; none: leashd holds none; "
          "absent: the proxy binds its own");

namespace leash::proxy {
namespace {

absl::Status BadFlag(absl::string_view flag, absl::string_view value, absl::string_view takes) {
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, "=", value, ": expected ", takes, "\n", ProxyUsage()));
}

// Every idle connection holds two descriptors (client, upstream); a busy one two pipes more.
// Raise the soft limit to the hard one, and the hard one to the kernel's nr_open when the
// process may (leashd runs it as root).
void RaiseDescriptorLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  rlim_t nr_open = 0;
  std::ifstream file("/proc/sys/fs/nr_open");
  if (file >> nr_open && nr_open > limit.rlim_max) {
    rlimit raised{nr_open, nr_open};
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) return;
  }
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
  getrlimit(RLIMIT_NOFILE, &limit);
  // Said once at start so a full table (connections refused and logged) is no surprise.
  std::cerr << "leash-proxy: descriptor limit " << limit.rlim_cur << " (about "
            << limit.rlim_cur / 2 << " idle connections)\n";
}

// leashd's sockets or none at all (--port-sockets): a listener is never bound here behind
// leashd's back.
absl::Status AdoptPortSockets(ProxyFlags& flags) {
  if (!flags.port_sockets) return absl::OkStatus();
  absl::StatusOr<HeldPortSockets> held = AdoptHeldPortSockets(
      *flags.port_sockets, flags.options.ipv4_address, flags.options.ipv6_address);
  if (!held.ok()) return held.status();
  std::cerr << "leash-proxy: " << held->ipv4.size() << " IPv4 and " << held->ipv6.size()
            << " IPv6 port sockets from leashd"
            << (held->ipv6_available ? "" : " (no IPv6 on this host)") << "\n";
  flags.options.held_ports = std::make_shared<const HeldPortSockets>(*std::move(held));
  return absl::OkStatus();
}

}  // namespace

std::string ProxyUsage() {
  return "usage: leash-proxy --decision-log-fd=N [--admin-socket=PATH] [--peek-timeout=1s]\n"
         "  [--connect-timeout=10s] [--max-connections=N] [--max-connections-per-subject=N]\n"
         "  [--pipe-size=BYTES]\n"
         "  [--resolver-threads=N] [--resolve-cache-ttl=30s] [--listen-ipv4=127.0.0.1]\n"
         "  [--listen-ipv6=::1] [--port-sockets=FIRST-LAST|none]\n";
}

absl::StatusOr<ProxyFlags> ParseProxyFlags(int argc, char** argv) {
  absl::StatusOr<base::CommandLine> line =
      base::ParseCommandLine(std::vector<std::string>(argv + 1, argv + argc));
  if (!line.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(line.status().message(), "\n", ProxyUsage()));
  }
  if (!line->positional.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument '",
                                                   line->positional.front(),
                                                   "'; flags are --name=value\n", ProxyUsage()));
  }
  ProxyFlags flags;
  flags.help = line->help;
  flags.admin_socket = absl::GetFlag(FLAGS_admin_socket);
  flags.decision_log_fd = static_cast<int>(absl::GetFlag(FLAGS_decision_log_fd));
  flags.decision_feed_fd = static_cast<int>(absl::GetFlag(FLAGS_decision_feed_fd));
  flags.options.ipv4_address = absl::GetFlag(FLAGS_listen_ipv4);
  flags.options.ipv6_address = absl::GetFlag(FLAGS_listen_ipv6);
  for (const auto& [name, value, out] :
       {std::tuple{"peek-timeout", absl::GetFlag(FLAGS_peek_timeout), &flags.options.peek_timeout},
        std::tuple{"connect-timeout", absl::GetFlag(FLAGS_connect_timeout),
                   &flags.options.connect_timeout},
        std::tuple{"resolve-cache-ttl", absl::GetFlag(FLAGS_resolve_cache_ttl),
                   &flags.resolve_cache_ttl}}) {
    if (value <= absl::ZeroDuration()) {
      return BadFlag(name, absl::FormatDuration(value), "a positive duration such as 1s or 500ms");
    }
    *out = value;
  }
  struct Number {
    const char* name;
    int64_t value;
    int64_t min;
  };
  for (const Number& n :
       {Number{"decision-log-fd", absl::GetFlag(FLAGS_decision_log_fd), -1},
        Number{"decision-feed-fd", absl::GetFlag(FLAGS_decision_feed_fd), -1},
        Number{"max-connections", absl::GetFlag(FLAGS_max_connections), 1},
        Number{"max-connections-per-subject", absl::GetFlag(FLAGS_max_connections_per_subject), 1},
        Number{"pipe-size", absl::GetFlag(FLAGS_pipe_size), 0},
        Number{"resolver-threads", absl::GetFlag(FLAGS_resolver_threads), 1}}) {
    if (n.value < n.min) return BadFlag(n.name, absl::StrCat(n.value), absl::StrCat("an integer >= ", n.min));
  }
  flags.options.max_connections = static_cast<size_t>(absl::GetFlag(FLAGS_max_connections));
  flags.options.max_connections_per_subject =
      static_cast<size_t>(absl::GetFlag(FLAGS_max_connections_per_subject));
  flags.options.pipe_size = static_cast<int>(absl::GetFlag(FLAGS_pipe_size));
  flags.resolver_threads = static_cast<int>(absl::GetFlag(FLAGS_resolver_threads));
  if (const std::string value = absl::GetFlag(FLAGS_port_sockets); !value.empty()) {
    flags.port_sockets.emplace();
    if (value != "none") {
      const std::vector<absl::string_view> ends = absl::StrSplit(value, absl::MaxSplits('-', 1));
      int first = 0, last = 0;
      if (ends.size() != 2 || !absl::SimpleAtoi(ends[0], &first) ||
          !absl::SimpleAtoi(ends[1], &last) || first < 3 || last < first) {
        return BadFlag("port-sockets", value,
                       "a range of inherited descriptors FIRST-LAST (3 <= FIRST <= LAST), or "
                       "none");
      }
      for (int fd = first; fd <= last; ++fd) flags.port_sockets->push_back(fd);
    }
  }
  if (flags.help) return flags;
  if (flags.decision_log_fd < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--decision-log-fd is required: leashd opens the decision log and passes its descriptor "
        "(the proxy owns no files)\n",
        ProxyUsage()));
  }
  if (fcntl(flags.decision_log_fd, F_GETFD) < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--decision-log-fd=", flags.decision_log_fd,
                                                   ": not an open descriptor in this process"));
  }
  return flags;
}

int RunProxyMain(int argc, char** argv, const SinkFactory& make_sink) {
  absl::StatusOr<ProxyFlags> flags = ParseProxyFlags(argc, argv);
  if (!flags.ok()) {
    std::cerr << "leash-proxy: " << flags.status().message() << "\n";
    return base::kExitUsage;
  }
  if (flags->help) {
    std::cout << base::FlagsHelp(ProxyUsage());
    return base::kExitOk;
  }
  RaiseDescriptorLimit();
  if (absl::Status adopted = AdoptPortSockets(*flags); !adopted.ok()) {
    std::cerr << "leash-proxy: --port-sockets: " << adopted.message() << "\n";
    return base::kExitStartFailed;
  }
  // Every thread inherits this mask; the main thread alone takes the signals.
  const sigset_t signals = sidecar::BlockStopSignals();

  SinkHandle sink = make_sink(flags->decision_log_fd, flags->decision_feed_fd);
  absl::StatusOr<std::unique_ptr<EventLoop>> loop = EventLoop::Create();
  if (!loop.ok()) {
    std::cerr << "leash-proxy: " << loop.status().message() << "\n";
    return base::kExitStartFailed;
  }
  // Read in this process's network namespace, where the proxy's own connections are made.
  absl::StatusOr<std::unique_ptr<HostAddresses>> host_addresses = HostAddresses::Open();
  if (!host_addresses.ok()) {
    std::cerr << "leash-proxy: the destination guard cannot read this host's addresses: "
              << host_addresses.status().message() << "\n";
    return base::kExitStartFailed;
  }
  flags->options.host_addresses = std::move(*host_addresses);
  absl::StatusOr<std::unique_ptr<NetlinkRouteLookup>> routes = NetlinkRouteLookup::Open();
  if (!routes.ok()) {
    std::cerr << "leash-proxy: the destination guard cannot ask this host's routes: "
              << routes.status().message() << "\n";
    return base::kExitStartFailed;
  }
  flags->options.routes = std::move(*routes);
  KernelOriginalDst original_dst;
  KernelSocketOwner socket_owner;
  ResolverOptions resolver_options;
  resolver_options.threads = flags->resolver_threads;
  resolver_options.positive_ttl = flags->resolve_cache_ttl;
  auto resolver = std::make_unique<ThreadPoolResolver>(loop->get(), resolver_options);
  auto manager = std::make_unique<ListenerManager>(loop->get(), &original_dst, &socket_owner,
                                                   resolver.get(), sink.sink.get(), flags->options);
  std::thread loop_thread([&] { (*loop)->Run(); });

  policystream::SubscriberOptions subscriber_options;
  subscriber_options.socket_path = flags->admin_socket;
  subscriber_options.kind = leash::v1::SIDECAR_KIND_PROXY;
  ListenerManager* const manager_ptr = manager.get();
  policystream::PolicySubscriber subscriber(
      subscriber_options,
      [manager_ptr, &sink](policystream::SubjectMapPtr map, uint64_t version) {
        if (sink.apply_levels) sink.apply_levels(*map);
        leash::v1::PolicyAck ack = manager_ptr->Apply(std::move(map), version);
        if (!ack.error().empty()) std::cerr << "leash-proxy: map " << version << ": " << ack.error() << "\n";
        return ack;
      },
      [manager_ptr, &sink](leash::v1::Heartbeat& heartbeat) {
        heartbeat.set_events(manager_ptr->counters().decided.load());
        if (sink.lost) heartbeat.set_records_lost(sink.lost());
        manager_ptr->counters().would_be_blocks.Fill(heartbeat.mutable_would_be_blocks());
      });
  subscriber.Start();
  std::cerr << "leash-proxy: running (pid " << getpid() << "), policy from " << flags->admin_socket
            << "\n";

  const std::optional<int> stop =
      sidecar::WaitForStopSignal(signals, absl::InfiniteDuration(), [] {});
  std::cerr << "leash-proxy: " << strsignal(stop.value_or(SIGTERM)) << ", stopping\n";
  subscriber.Stop();
  manager->Shutdown();
  (*loop)->Stop();
  loop_thread.join();
  resolver.reset();
  manager.reset();
  sink.sink.reset();  // flushes what is queued
  return base::kExitOk;
}

}  // namespace leash::proxy
