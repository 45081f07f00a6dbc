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

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "proto/policystream/policy_subscriber.h"
#include "proxy/event_loop.h"
#include "proxy/held_port_sockets.h"
#include "proxy/host_addresses.h"
#include "proxy/listener_manager.h"
#include "proxy/original_dst.h"
#include "proxy/resolver.h"
#include "proxy/socket_owner.h"

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

}  // namespace

std::string ProxyUsage() {
  return "usage: leash-proxy --decision-log-fd=N [--admin-socket=PATH] [--peek-timeout=1s]\n"
         "  [--connect-timeout=10s] [--max-connections=N] [--max-connections-per-subject=N]\n"
         "  [--pipe-size=BYTES]\n"
         "  [--resolver-threads=N] [--resolve-cache-ttl=30s] [--listen-ipv4=127.0.0.1]\n"
         "  [--listen-ipv6=::1] [--port-sockets=FIRST-LAST|none]\n";
}

absl::StatusOr<ProxyFlags> ParseProxyFlags(int argc, char** argv) {
  ProxyFlags flags;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (!absl::ConsumePrefix(&arg, "--")) {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument '", arg, "'; flags are --name=value\n", ProxyUsage()));
    }
    const size_t eq = arg.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", arg, " needs a value (--", arg, "=...)\n", ProxyUsage()));
    }
    const absl::string_view name = arg.substr(0, eq);
    const absl::string_view value = arg.substr(eq + 1);
    auto duration = [&](absl::Duration* out) -> absl::Status {
      if (!absl::ParseDuration(value, out) || *out <= absl::ZeroDuration()) {
        return BadFlag(name, value, "a positive duration such as 1s or 500ms");
      }
      return absl::OkStatus();
    };
    auto number = [&](int64_t* out, int64_t min) -> absl::Status {
      if (!absl::SimpleAtoi(value, out) || *out < min) {
        return BadFlag(name, value, absl::StrCat("an integer >= ", min));
      }
      return absl::OkStatus();
    };
    int64_t n = 0;
    absl::Status status;
    if (name == "admin-socket") {
      flags.admin_socket = std::string(value);
    } else if (name == "decision-log-fd") {
      status = number(&n, 0);
      flags.decision_log_fd = static_cast<int>(n);
    } else if (name == "peek-timeout") {
      status = duration(&flags.options.peek_timeout);
    } else if (name == "connect-timeout") {
      status = duration(&flags.options.connect_timeout);
    } else if (name == "max-connections") {
      status = number(&n, 1);
      flags.options.max_connections = static_cast<size_t>(n);
    } else if (name == "max-connections-per-subject") {
      status = number(&n, 1);
      flags.options.max_connections_per_subject = static_cast<size_t>(n);
    } else if (name == "pipe-size") {
      status = number(&n, 0);
      flags.options.pipe_size = static_cast<int>(n);
    } else if (name == "resolver-threads") {
      status = number(&n, 1);
      flags.resolver_threads = static_cast<int>(n);
    } else if (name == "resolve-cache-ttl") {
      status = duration(&flags.resolve_cache_ttl);
    } else if (name == "listen-ipv4") {
      flags.options.ipv4_address = std::string(value);
    } else if (name == "listen-ipv6") {
      flags.options.ipv6_address = std::string(value);
    } else if (name == "port-sockets") {
      flags.port_sockets.emplace();
      if (value != "none") {
        const std::vector<absl::string_view> ends = absl::StrSplit(value, absl::MaxSplits('-', 1));
        int first = 0, last = 0;
        if (ends.size() != 2 || !absl::SimpleAtoi(ends[0], &first) ||
            !absl::SimpleAtoi(ends[1], &last) || first < 3 || last < first) {
          return BadFlag(name, value,
                         "a range of inherited descriptors FIRST-LAST (3 <= FIRST <= LAST), or "
                         "none");
        }
        for (int fd = first; fd <= last; ++fd) flags.port_sockets->push_back(fd);
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name, "\n", ProxyUsage()));
    }
    if (!status.ok()) return status;
  }
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
    return 2;
  }
  RaiseDescriptorLimit();
  if (flags->port_sockets) {
    // leashd's sockets or none at all: a listener is never bound here behind leashd's back.
    absl::StatusOr<HeldPortSockets> held = AdoptHeldPortSockets(
        *flags->port_sockets, flags->options.ipv4_address, flags->options.ipv6_address);
    if (!held.ok()) {
      std::cerr << "leash-proxy: --port-sockets: " << held.status().message() << "\n";
      return 2;
    }
    std::cerr << "leash-proxy: " << held->ipv4.size() << " IPv4 and " << held->ipv6.size()
              << " IPv6 port sockets from leashd"
              << (held->ipv6_available ? "" : " (no IPv6 on this host)") << "\n";
    flags->options.held_ports = std::make_shared<const HeldPortSockets>(*std::move(held));
  }
  // Every thread inherits this mask; the main thread alone takes the signals (sigwait).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  SinkHandle sink = make_sink(flags->decision_log_fd);
  absl::StatusOr<std::unique_ptr<EventLoop>> loop = EventLoop::Create();
  if (!loop.ok()) {
    std::cerr << "leash-proxy: " << loop.status().message() << "\n";
    return 1;
  }
  // Read in this process's network namespace, where the proxy's own connections are made.
  absl::StatusOr<std::unique_ptr<HostAddresses>> host_addresses = HostAddresses::Open();
  if (!host_addresses.ok()) {
    std::cerr << "leash-proxy: the destination guard cannot read this host's addresses: "
              << host_addresses.status().message() << "\n";
    return 1;
  }
  flags->options.host_addresses = std::move(*host_addresses);
  KernelOriginalDst original_dst;
  KernelSocketOwner socket_owner;
  ResolverOptions resolver_options;
  resolver_options.threads = flags->resolver_threads;
  resolver_options.positive_ttl = flags->resolve_cache_ttl;
  auto resolver = std::make_unique<ThreadPoolResolver>(loop->get(), resolver_options);
  auto manager = std::make_unique<ListenerManager>(loop->get(), &original_dst, &socket_owner,
                                                   resolver.get(), sink.sink.get(), flags->options);
  std::thread loop_thread([&] { (*loop)->Run(); });

  sidecar::SubscriberOptions subscriber_options;
  subscriber_options.socket_path = flags->admin_socket;
  subscriber_options.kind = leash::v1::SIDECAR_KIND_PROXY;
  ListenerManager* const manager_ptr = manager.get();
  sidecar::PolicySubscriber subscriber(
      subscriber_options,
      [manager_ptr, &sink](sidecar::SubjectMapPtr map, uint64_t version) {
        if (sink.apply_levels) sink.apply_levels(*map);
        leash::v1::PolicyAck ack = manager_ptr->Apply(std::move(map), version);
        if (!ack.error().empty()) std::cerr << "leash-proxy: map " << version << ": " << ack.error() << "\n";
        return ack;
      },
      [manager_ptr, &sink](leash::v1::Heartbeat& heartbeat) {
        heartbeat.set_events(manager_ptr->counters().decided.load());
        if (sink.lost) heartbeat.set_records_lost(sink.lost());
      });
  subscriber.Start();
  std::cerr << "leash-proxy: running (pid " << getpid() << "), policy from " << flags->admin_socket
            << "\n";

  while (true) {
    int signal_number = 0;
    if (sigwait(&signals, &signal_number) != 0) continue;
    if (signal_number == SIGHUP) continue;  // policy changes arrive over PolicyStream
    std::cerr << "leash-proxy: " << strsignal(signal_number) << ", stopping\n";
    break;
  }
  subscriber.Stop();
  manager->Shutdown();
  (*loop)->Stop();
  loop_thread.join();
  resolver.reset();
  manager.reset();
  sink.sink.reset();  // flushes what is queued
  return 0;
}

}  // namespace leash::proxy
