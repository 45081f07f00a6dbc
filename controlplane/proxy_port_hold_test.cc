// The hold on the proxy's ports, against the real kernel: every bind another UID can try on a
// held port fails, on any address and with SO_REUSEADDR and SO_REUSEPORT (as root: the test
// binds as nobody), TCP and UDP alike; a socket of the holder's own UID fails too unless it sets SO_REUSEPORT; a
// connection to a held port nobody listens on is reset. A small range of free high ports
// stands in for 18000-18999 so the test shares the host with other runs.
#include "controlplane/proxy_port_hold.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/root.h"

namespace leash::controlplane {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr uint16_t kPorts = 8;

struct Attempt {
  const char* label;
  int family;
  const char* address;
  bool v6only;
};

// What a squatter might bind: the redirect's targets (127.0.0.1:P, [::1]:P) and the rest.
constexpr Attempt kAttempts[] = {
    {"127.0.0.1", AF_INET, "127.0.0.1", false},
    {"0.0.0.0", AF_INET, "0.0.0.0", false},
    {"127.0.0.2", AF_INET, "127.0.0.2", false},
    {"::1", AF_INET6, "::1", true},
    {":: (dual stack)", AF_INET6, "::", false},
    {":: (IPv6 only)", AF_INET6, "::", true},
    {"::ffff:127.0.0.1", AF_INET6, "::ffff:127.0.0.1", false},
    {"::ffff:127.0.0.2", AF_INET6, "::ffff:127.0.0.2", false},
};

// Binds (family, address, port) with SO_REUSEADDR (and SO_REUSEPORT when `reuseport`);
// returns 0 or the errno.
int TryBind(int family, const char* address, bool v6only, uint16_t port, bool reuseport,
            int* fd_out = nullptr, int type = SOCK_STREAM) {
  const int fd = socket(family, type | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  const int one = 1;
  const int v6only_value = v6only ? 1 : 0;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (reuseport) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  sockaddr_storage storage{};
  socklen_t length;
  if (family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&storage);
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    inet_pton(AF_INET, address, &in->sin_addr);
    length = sizeof(*in);
  } else {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only_value, sizeof(v6only_value));
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&storage);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    inet_pton(AF_INET6, address, &in6->sin6_addr);
    length = sizeof(*in6);
  }
  const int rc = bind(fd, reinterpret_cast<sockaddr*>(&storage), length);
  const int error = rc == 0 ? 0 : errno;
  if (rc == 0 && fd_out != nullptr) {
    *fd_out = fd;
  } else {
    close(fd);
  }
  return error;
}

class ProxyPortHoldTest : public ::testing::Test {
 protected:
  // A hold on kPorts consecutive ports that were all free (a few random tries).
  void SetUp() override {
    std::mt19937 rng(std::random_device{}());
    std::uniform_int_distribution<int> base(20000, 30000);
    for (int tries = 0; tries < 20; ++tries) {
      ProxyPortHold::Options options;
      options.first_port = static_cast<uint16_t>(base(rng));
      options.last_port = static_cast<uint16_t>(options.first_port + kPorts - 1);
      auto hold = std::make_unique<ProxyPortHold>(options);
      if (hold->TakeMissing().empty()) {
        hold_ = std::move(hold);
        first_ = options.first_port;
        return;
      }
    }
    FAIL() << "no run of " << kPorts << " free ports found";
  }
  std::unique_ptr<ProxyPortHold> hold_;
  uint16_t first_ = 0;
};

TEST_F(ProxyPortHoldTest, AnotherUidBindsAHeldPortOnNoAddressWhateverItsOptions) {
  LEASH_REQUIRE_ROOT();  // to bind as another UID
  ASSERT_TRUE(hold_->ipv6_available()) << "the test needs ::1";
  // TCP and UDP (the DNS filter's), each on 127.0.0.1, ::1 and the wildcard.
  EXPECT_EQ(hold_->held(), 4u * kPorts);
  EXPECT_EQ(hold_->total(), 6u * kPorts);
  EXPECT_EQ(hold_->Descriptors().size(), hold_->wanted());
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) _exit(100);
    int bound = 0;
    for (uint16_t port = first_; port < first_ + kPorts; ++port) {
      for (const Attempt& attempt : kAttempts) {
        for (int type : {SOCK_STREAM, SOCK_DGRAM}) {
          for (bool reuseport : {false, true}) {
            const int error = TryBind(attempt.family, attempt.address, attempt.v6only, port,
                                      reuseport, nullptr, type);
            if (error != EADDRINUSE) {
              std::fprintf(stderr, "%s %s port %u reuseport %d: %s\n", attempt.label,
                           type == SOCK_DGRAM ? "udp" : "tcp", port, reuseport,
                           error == 0 ? "BOUND" : strerror(error));
              ++bound;
            }
          }
        }
      }
    }
    _exit(bound > 99 ? 99 : bound);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "binds that did not fail with EADDRINUSE (100: setuid)";
}

TEST_F(ProxyPortHoldTest, TheHoldersOwnUidBindsNothingWithoutSoReusePort) {
  for (uint16_t port = first_; port < first_ + kPorts; ++port) {
    for (const Attempt& attempt : kAttempts) {
      for (int type : {SOCK_STREAM, SOCK_DGRAM}) {
        EXPECT_EQ(TryBind(attempt.family, attempt.address, attempt.v6only, port, false, nullptr,
                          type),
                  EADDRINUSE)
            << attempt.label << (type == SOCK_DGRAM ? " udp" : " tcp") << " port " << port;
      }
    }
  }
}

TEST_F(ProxyPortHoldTest, AConnectionToAHeldPortNobodyListensOnIsRefused) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(first_);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_NE(connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0);
  EXPECT_EQ(errno, ECONNREFUSED);
  close(fd);
}

TEST_F(ProxyPortHoldTest, TheHeldDescriptorsAreBoundOnTheProxyAddressesAndNotListening) {
  for (int fd : hold_->Descriptors()) {
    sockaddr_storage local{};
    socklen_t length = sizeof(local);
    ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length), 0);
    int listening = -1;
    socklen_t size = sizeof(listening);
    ASSERT_EQ(getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size), 0);
    EXPECT_EQ(listening, 0);
    char text[INET6_ADDRSTRLEN] = {};
    uint16_t port = 0;
    if (local.ss_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(&local);
      inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
      port = ntohs(in->sin_port);
    } else {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&local);
      inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
      port = ntohs(in6->sin6_port);
    }
    EXPECT_THAT(std::string(text), ::testing::AnyOf("127.0.0.1", "::1"));
    EXPECT_GE(port, first_);
    EXPECT_LT(port, first_ + kPorts);
  }
}

// The kernel's rule the hold relies on to share a port among its own sockets, and why only
// the holder's UID (root, for leashd) could ever join it.
TEST_F(ProxyPortHoldTest, TheHoldersOwnUidCanShareAPortOnlyWithSoReusePort) {
  int fd = -1;
  EXPECT_EQ(TryBind(AF_INET, "127.0.0.2", false, first_, /*reuseport=*/true, &fd), 0);
  if (fd >= 0) close(fd);
}

TEST(ProxyPortHoldAlone, APortTakenBeforeIsReportedMissingAndTakenOnceFreed) {
  int squatter = -1;
  uint16_t port = 0;
  for (int tries = 0; tries < 20 && squatter < 0; ++tries) {
    port = static_cast<uint16_t>(30000 + std::random_device{}() % 2000);
    if (TryBind(AF_INET, "0.0.0.0", false, port, /*reuseport=*/false, &squatter) != 0) {
      squatter = -1;
    }
  }
  ASSERT_GE(squatter, 0);
  ASSERT_EQ(listen(squatter, 1), 0);
  ProxyPortHold::Options options;
  options.first_port = port;
  options.last_port = port;
  ProxyPortHold hold(options);
  std::vector<ProxyPortHold::Missing> missing = hold.TakeMissing(3, absl::Milliseconds(1));
  // The IPv4 wildcard squatter blocks 127.0.0.1 and the dual-stack wildcard; ::1 is free.
  ASSERT_EQ(missing.size(), 2u);
  EXPECT_EQ(missing[0].address, "127.0.0.1");
  EXPECT_EQ(missing[0].port, port);
  EXPECT_EQ(missing[0].error, EADDRINUSE);
  EXPECT_TRUE(missing[0].redirect_target);
  EXPECT_EQ(missing[1].address, "::");
  EXPECT_FALSE(missing[1].redirect_target);
  EXPECT_THAT(ProxyPortHold::Describe(missing),
              HasSubstr(absl::StrCat("127.0.0.1:", port, " (Address already in use)")));
  EXPECT_THAT(ProxyPortHold::Describe(missing), HasSubstr(absl::StrCat("[::]:", port)));
  // TCP on ::1, and UDP on both (the squatter is TCP).
  EXPECT_EQ(hold.held(), 3u);
  EXPECT_FALSE(hold.Holds(port));
  close(squatter);
  EXPECT_THAT(hold.TakeMissing(), IsEmpty());
  EXPECT_EQ(hold.held(), 4u);
  EXPECT_EQ(hold.total(), 6u);
  EXPECT_TRUE(hold.Holds(port));
  EXPECT_FALSE(hold.Holds(port + 1));
}

TEST(ProxyPortHoldDescribe, FoldsConsecutivePortsOfOneAddressAndOneError) {
  const std::vector<ProxyPortHold::Missing> missing = {
      {"127.0.0.1", 18004, EADDRINUSE}, {"::1", 18004, EADDRINUSE},
      {"::1", 18005, EADDRINUSE},       {"::1", 18006, EADDRINUSE},
      {"127.0.0.1", 18009, EACCES},
      {"127.0.0.1", 18004, EADDRINUSE, true, /*udp=*/true},
      {"127.0.0.1", 18005, EADDRINUSE, true, /*udp=*/true},
  };
  EXPECT_EQ(ProxyPortHold::Describe(missing),
            "127.0.0.1:18004 (Address already in use), 127.0.0.1:18009 (Permission denied), "
            "[::1]:18004-18006 (Address already in use), "
            "udp 127.0.0.1:18004-18005 (Address already in use)");
}

}  // namespace
}  // namespace leash::controlplane
