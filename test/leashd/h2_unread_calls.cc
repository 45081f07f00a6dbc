// Test helper: a tools-socket caller that never reads. Speaks HTTP/2 by hand: the preface, an
// empty SETTINGS (and, unless --ack, never an acknowledgement of the server's), then `--hold` calls that send
// their headers and nothing more (admitted, and in flight for good), then up to `count` CheckTool
// calls, each its HEADERS and one request message, never half-closed. It never reads its socket
// and never opens its flow-control window, so gRPC can send neither the answers' messages
// (which keeps those calls alive in leashd) nor, once the kernel's buffers are full, anything
// else (which it then queues in its own memory). Prints one line:
//   cut_after=<calls sent before leashd shut the connection>   or   not_cut sent=<count>
//   h2_unread_calls <socket> <count> [--hold=N] [--ack]
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

// One HTTP/2 frame: 24-bit length, type, flags, 31-bit stream id, payload.
std::string Frame(uint8_t type, uint8_t flags, uint32_t stream, const std::string& payload) {
  std::string out;
  const size_t n = payload.size();
  out += static_cast<char>((n >> 16) & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>(type);
  out += static_cast<char>(flags);
  out += static_cast<char>((stream >> 24) & 0x7f);
  out += static_cast<char>((stream >> 16) & 0xff);
  out += static_cast<char>((stream >> 8) & 0xff);
  out += static_cast<char>(stream & 0xff);
  return out + payload;
}

// HPACK "literal header field without indexing, new name", lengths under 127, no Huffman.
std::string Header(const std::string& name, const std::string& value) {
  std::string out(1, '\0');
  out += static_cast<char>(name.size());
  out += name;
  out += static_cast<char>(value.size());
  out += value;
  return out;
}

// Sends it all; false when the peer has shut the connection.
bool SendAll(int fd, const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

bool PeerHungUp(int fd) {
  pollfd p{fd, POLLRDHUP, 0};
  return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: h2_unread_calls <socket> <count> [--hold=N] [--ack]\n");
    return 2;
  }
  const int count = std::atoi(argv[2]);
  int hold = 0;
  bool ack = false;
  for (int i = 3; i < argc; ++i) {
    if (std::strncmp(argv[i], "--hold=", 7) == 0) hold = std::atoi(argv[i] + 7);
    if (std::strcmp(argv[i], "--ack") == 0) ack = true;
  }
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, argv[1], sizeof(address.sun_path) - 1);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    std::fprintf(stderr, "connect %s: %s\n", argv[1], std::strerror(errno));
    return 1;
  }
  std::string start = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  start += Frame(0x4, 0, 0, "");  // SETTINGS, none changed
  if (!SendAll(fd, start)) {
    std::printf("cut_after=0\n");
    return 0;
  }
  if (ack) {
    // Once the server's SETTINGS have arrived (left unread), acknowledge them, as a client
    // would that read them: from then on gRPC enforces the calls-per-connection cap itself.
    pollfd ready{fd, POLLIN, 0};
    if (poll(&ready, 1, 10000) != 1 || !SendAll(fd, Frame(0x4, 0x1, 0, ""))) {
      std::printf("cut_after=0\n");
      return 0;
    }
  }
  const std::string headers =
      Header(":method", "POST") + Header(":scheme", "http") +
      Header(":path", "/leash.v1.Tools/CheckTool") + Header(":authority", "localhost") +
      Header("content-type", "application/grpc") + Header("te", "trailers");
  // CheckToolRequest{name: "read_file"}, framed as one gRPC message.
  const std::string request = std::string("\x0a\x09read_file", 11);
  std::string message(1, '\0');
  message += std::string(3, '\0');
  message += static_cast<char>(request.size());
  message += request;
  for (int i = 0; i < hold + count; ++i) {
    const uint32_t stream = 2 * static_cast<uint32_t>(i) + 1;
    std::string call = Frame(0x1, 0x4, stream, headers);
    if (i >= hold) call += Frame(0x0, 0, stream, message);
    if (!SendAll(fd, call) || PeerHungUp(fd)) {
      std::printf("cut_after=%d\n", i);
      return 0;
    }
  }
  // Everything went out; leashd may take a few seconds to find the connection unread.
  pollfd p{fd, POLLRDHUP, 0};
  if (poll(&p, 1, 15000) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
    std::printf("cut_after=%d\n", hold + count);
    return 0;
  }
  std::printf("not_cut sent=%d\n", hold + count);
  return 0;
}
