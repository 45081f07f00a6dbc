// A DNS client run as a test account (the agent): asks `server`:53 one question over UDP or
// TCP and prints what came back on one line:
//   rcode=<n> tc=<0|1> id=<n> answers=<count> addrs=<a,b,...> bytes=<n>   or   no answer
// usage: dns_probe udp|tcp SERVER NAME [TYPE] [--edns=N] [--second=NAME] [--garbage=BYTES]
//        dns_probe bench SERVER NAME SECONDS    (UDP, one question at a time: prints qps=<n>)
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "proxy/dns_message.h"
#include "proxy/socket_address.h"
#include "proxy/testing/dns_wire.h"

namespace dns = leash::proxy::dns;
using leash::proxy::SocketAddress;

namespace {

int Open(bool tcp, const SocketAddress& server) {
  const int fd = socket(leash::proxy::Family(server), (tcp ? SOCK_STREAM : SOCK_DGRAM) | SOCK_CLOEXEC, 0);
  timeval timeout{3, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_storage storage;
  const socklen_t length = leash::proxy::ToSockaddr(server, &storage);
  if (connect(fd, reinterpret_cast<sockaddr*>(&storage), length) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool ReadFull(int fd, char* out, size_t size) {
  size_t got = 0;
  while (got < size) {
    const ssize_t n = recv(fd, out + got, size - got, 0);
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

// One exchange; nullopt when nothing came back.
std::optional<std::string> Ask(int fd, bool tcp, const std::string& query) {
  static char buffer[65536];
  if (!tcp) {
    if (send(fd, query.data(), query.size(), 0) < 0) return std::nullopt;
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) return std::nullopt;
    return std::string(buffer, static_cast<size_t>(n));
  }
  std::string framed;
  framed += static_cast<char>(query.size() >> 8);
  framed += static_cast<char>(query.size() & 0xFF);
  framed += query;
  if (send(fd, framed.data(), framed.size(), MSG_NOSIGNAL) < 0) return std::nullopt;
  unsigned char prefix[2];
  if (!ReadFull(fd, reinterpret_cast<char*>(prefix), 2)) return std::nullopt;
  const size_t length = (prefix[0] << 8) | prefix[1];
  if (!ReadFull(fd, buffer, length)) return std::nullopt;
  return std::string(buffer, length);
}

uint16_t TypeOf(const std::string& text) {
  if (text == "AAAA") return dns::kTypeAaaa;
  if (text == "TXT") return dns::kTypeTxt;
  return dns::kTypeA;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: dns_probe udp|tcp|bench SERVER NAME [TYPE|SECONDS] [--edns=N] "
                         "[--second=NAME] [--garbage=BYTES]\n");
    return 2;
  }
  const std::string mode = argv[1];
  std::optional<leash::engine::IpAddress> ip = leash::engine::ParseIpAddress(argv[2]);
  if (!ip) return 2;
  const SocketAddress server{*ip, 53};
  const std::string name = argv[3];
  if (mode == "bench") {
    double seconds = 2;
    if (argc > 4 && !absl::SimpleAtod(argv[4], &seconds)) return 2;
    const int fd = Open(false, server);
    if (fd < 0) return 1;
    const absl::Time end = absl::Now() + absl::Seconds(seconds);
    const absl::Time start = absl::Now();
    uint64_t answered = 0;
    uint16_t id = 1;
    while (absl::Now() < end) {
      const std::string query = dns::testing_wire::Query(id++, {{name, dns::kTypeA}});
      std::optional<std::string> answer = Ask(fd, false, query);
      if (!answer || answer->size() < 2 || answer->substr(0, 2) != query.substr(0, 2)) {
        std::printf("failed after %llu answers\n", static_cast<unsigned long long>(answered));
        return 1;
      }
      ++answered;
    }
    std::printf("qps=%.0f\n", answered / absl::ToDoubleSeconds(absl::Now() - start));
    return 0;
  }
  const bool tcp = mode == "tcp";
  uint16_t type = dns::kTypeA;
  std::optional<uint16_t> edns;
  std::vector<std::pair<std::string, uint16_t>> questions;
  int garbage = 0;
  for (int i = 4; i < argc; ++i) {
    absl::string_view arg = argv[i];
    int value = 0;
    if (absl::ConsumePrefix(&arg, "--edns=") && absl::SimpleAtoi(arg, &value)) {
      edns = static_cast<uint16_t>(value);
    } else if (absl::ConsumePrefix(&arg, "--second=")) {
      questions.push_back({std::string(arg), dns::kTypeA});
    } else if (absl::ConsumePrefix(&arg, "--garbage=") && absl::SimpleAtoi(arg, &garbage)) {
    } else {
      type = TypeOf(argv[i]);
    }
  }
  questions.insert(questions.begin(), {name, type});
  std::string query = dns::testing_wire::Query(0x5151, questions, edns);
  if (garbage > 0) {
    query.clear();
    for (int i = 0; i < garbage; ++i) query += static_cast<char>((i * 131 + 7) % 256);
  }
  const int fd = Open(tcp, server);
  if (fd < 0) {
    std::printf("connect failed: %s\n", std::strerror(errno));
    return 1;
  }
  std::optional<std::string> answer = Ask(fd, tcp, query);
  close(fd);
  if (!answer) {
    std::printf("no answer\n");
    return 1;
  }
  absl::StatusOr<dns::Message> parsed = dns::ParseMessage(*answer);
  if (!parsed.ok()) {
    std::printf("malformed answer: %s\n", std::string(parsed.status().message()).c_str());
    return 1;
  }
  std::vector<std::string> addresses;
  for (const dns::Record& record : parsed->answers) {
    if (record.address) addresses.push_back(leash::engine::FormatIpAddress(*record.address));
  }
  std::printf("rcode=%d tc=%d id=%d answers=%zu addrs=%s bytes=%zu\n", parsed->header.rcode(),
              parsed->header.truncated() ? 1 : 0, parsed->header.id, parsed->answers.size(),
              absl::StrJoin(addresses, ",").c_str(), answer->size());
  return 0;
}
