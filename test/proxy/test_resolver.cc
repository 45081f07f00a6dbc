#include "test/proxy/test_resolver.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "proxy/dns_message.h"
#include "proxy/socket_address.h"
#include "proxy/testing/dns_wire.h"

namespace leash::testing {
namespace {

namespace dns = proxy::dns;

int BindDns(const proxy::SocketAddress& address, int type) {
  const int fd = socket(proxy::Family(address), type | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_storage storage;
  const socklen_t length = proxy::ToSockaddr(address, &storage);
  if (bind(fd, reinterpret_cast<sockaddr*>(&storage), length) != 0 ||
      (type == SOCK_STREAM && listen(fd, 64) != 0)) {
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

}  // namespace

absl::StatusOr<std::unique_ptr<TestResolver>> TestResolver::Start(const std::string& ip, Table table) {
  std::unique_ptr<TestResolver> resolver(new TestResolver(std::move(table)));
  const proxy::SocketAddress address{*engine::ParseIpAddress(ip), 53};
  resolver->udp_fd_ = BindDns(address, SOCK_DGRAM);
  resolver->tcp_fd_ = BindDns(address, SOCK_STREAM);
  resolver->stop_fd_ = eventfd(0, EFD_CLOEXEC);
  if (resolver->udp_fd_ < 0 || resolver->tcp_fd_ < 0 || resolver->stop_fd_ < 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("test resolver on ", ip, ":53"));
  }
  TestResolver* raw = resolver.get();
  resolver->thread_ = std::thread([raw] { raw->Serve(); });
  return resolver;
}

TestResolver::~TestResolver() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    if (write(stop_fd_, &one, sizeof(one)) < 0) {
      // The thread then never wakes; nothing better to do in a destructor.
    }
    thread_.join();
  }
  for (int fd : {udp_fd_, tcp_fd_, stop_fd_}) {
    if (fd >= 0) close(fd);
  }
}

int TestResolver::Asked(const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto it = asked_.find(name);
  return it == asked_.end() ? 0 : it->second;
}

int TestResolver::asked_total() const {
  absl::MutexLock lock(&mu_);
  int total = 0;
  for (const auto& [name, count] : asked_) total += count;
  return total;
}

std::string TestResolver::AnswerTo(const std::string& query) {
  absl::StatusOr<dns::Message> parsed = dns::ParseMessage(query);
  if (!parsed.ok() || parsed->questions.size() != 1) {
    return dns::BuildHeaderOnlyReply(query, dns::Rcode::kFormErr);
  }
  const dns::Question& question = parsed->questions.front();
  {
    absl::MutexLock lock(&mu_);
    ++asked_[question.name];
  }
  auto it = table_.find(question.name);
  if (it == table_.end()) return dns::BuildReply(query, *parsed, dns::Rcode::kNxDomain);
  std::vector<dns::testing_wire::RecordSpec> records;
  for (const std::string& address : it->second) {
    const bool v6 = address.find(':') != std::string::npos;
    if ((question.type == dns::kTypeAaaa) != v6) continue;
    records.push_back({question.name, question.type, 60, address});
  }
  return dns::testing_wire::Answer(parsed->header.id, question.name, question.type, records);
}

void TestResolver::Serve() {
  char buffer[65536];
  while (true) {
    pollfd fds[3] = {{udp_fd_, POLLIN, 0}, {tcp_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[2].revents) return;
    if (fds[0].revents & POLLIN) {
      sockaddr_storage from{};
      socklen_t from_length = sizeof(from);
      const ssize_t n = recvfrom(udp_fd_, buffer, sizeof(buffer), 0,
                                 reinterpret_cast<sockaddr*>(&from), &from_length);
      if (n > 0) {
        const std::string answer = AnswerTo(std::string(buffer, static_cast<size_t>(n)));
        sendto(udp_fd_, answer.data(), answer.size(), 0, reinterpret_cast<sockaddr*>(&from),
               from_length);
      }
    }
    if (fds[1].revents & POLLIN) {
      const int client = accept4(tcp_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      timeval timeout{2, 0};
      setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
      unsigned char prefix[2];
      while (ReadFull(client, reinterpret_cast<char*>(prefix), 2)) {
        const size_t length = (prefix[0] << 8) | prefix[1];
        if (!ReadFull(client, buffer, length)) break;
        const std::string answer = AnswerTo(std::string(buffer, length));
        std::string framed;
        framed += static_cast<char>(answer.size() >> 8);
        framed += static_cast<char>(answer.size() & 0xFF);
        framed += answer;
        if (send(client, framed.data(), framed.size(), MSG_NOSIGNAL) < 0) break;
      }
      close(client);
    }
  }
}

}  // namespace leash::testing
