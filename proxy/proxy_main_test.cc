// leash-proxy's flags: what parses, and what each refusal says.
#include "proxy/proxy_main.h"

#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace leash::proxy {
namespace {

absl::StatusOr<ProxyFlags> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "leash-proxy");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  return ParseProxyFlags(static_cast<int>(argv.size()), argv.data());
}

TEST(ParseProxyFlags, EveryFlag) {
  absl::StatusOr<ProxyFlags> flags =
      Parse({"--decision-log-fd=2", "--admin-socket=/run/x.sock", "--peek-timeout=250ms",
             "--connect-timeout=3s", "--max-connections=50", "--max-connections-per-subject=7",
             "--pipe-size=1048576",
             "--resolver-threads=8", "--resolve-cache-ttl=1m", "--listen-ipv4=127.0.0.2",
             "--listen-ipv6=::1"});
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->decision_log_fd, 2);
  EXPECT_EQ(flags->admin_socket, "/run/x.sock");
  EXPECT_EQ(flags->options.peek_timeout, absl::Milliseconds(250));
  EXPECT_EQ(flags->options.connect_timeout, absl::Seconds(3));
  EXPECT_EQ(flags->options.max_connections, 50u);
  EXPECT_EQ(flags->options.max_connections_per_subject, 7u);
  EXPECT_EQ(flags->options.pipe_size, 1048576);
  EXPECT_EQ(flags->resolver_threads, 8);
  EXPECT_EQ(flags->resolve_cache_ttl, absl::Minutes(1));
  EXPECT_EQ(flags->options.ipv4_address, "127.0.0.2");
  EXPECT_FALSE(flags->options.allow_port_zero);
  EXPECT_FALSE(flags->port_sockets.has_value());
}

TEST(ParseProxyFlags, PortSocketsAreARangeOfDescriptorsOrNone) {
  absl::StatusOr<ProxyFlags> range = Parse({"--decision-log-fd=2", "--port-sockets=4-7"});
  ASSERT_TRUE(range.ok()) << range.status();
  EXPECT_EQ(*range->port_sockets, (std::vector<int>{4, 5, 6, 7}));
  absl::StatusOr<ProxyFlags> none = Parse({"--decision-log-fd=2", "--port-sockets=none"});
  ASSERT_TRUE(none.ok()) << none.status();
  ASSERT_TRUE(none->port_sockets.has_value());
  EXPECT_TRUE(none->port_sockets->empty());
  for (const char* bad : {"--port-sockets=7-4", "--port-sockets=1-4", "--port-sockets=4",
                          "--port-sockets=a-b"}) {
    absl::StatusOr<ProxyFlags> refused = Parse({"--decision-log-fd=2", bad});
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_TRUE(absl::StrContains(refused.status().message(), "range of inherited descriptors"))
        << refused.status();
  }
}

TEST(ParseProxyFlags, Refusals) {
  struct Case {
    std::string name;
    std::vector<std::string> args;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {"decision_log_fd_required", {}, "--decision-log-fd is required"},
      {"decision_log_fd_must_be_open", {"--decision-log-fd=987"}, "not an open descriptor"},
      {"bad_duration", {"--decision-log-fd=2", "--peek-timeout=soon"}, "--peek-timeout=soon"},
      {"negative_duration", {"--decision-log-fd=2", "--connect-timeout=-1s"}, "positive duration"},
      {"bad_number", {"--decision-log-fd=2", "--max-connections=0"}, "an integer >= 1"},
      {"unknown_flag", {"--decision-log-fd=2", "--verbose=1"}, "unknown flag '--verbose=1'"},
      {"flag_without_value", {"--decision-log-fd"}, "needs a value"},
      {"positional", {"run"}, "unexpected argument 'run'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<ProxyFlags> flags = Parse(c.args);
    ASSERT_FALSE(flags.ok());
    EXPECT_EQ(flags.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(flags.status().message(), c.fragment)) << flags.status();
  }
}

}  // namespace
}  // namespace leash::proxy
