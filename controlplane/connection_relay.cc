#include "controlplane/connection_relay.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "controlplane/h2_settings_gate.h"

namespace leash::controlplane {
namespace {

constexpr uint64_t kWake = 0;
constexpr uint32_t kClosing = EPOLLHUP | EPOLLERR | EPOLLRDHUP;

bool Retry() { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR; }

}  // namespace

struct ConnectionRelay::Connection {
  Connection(const ucred& c, int agent_fd, int relay_fd, const ConnectionRelayOptions& options)
      : cred(c),
        agent(agent_fd),
        inner(relay_fd),
        gate(options.max_streams_before_ack),
        capacity(options.buffer_bytes),
        up(new char[options.buffer_bytes]),
        down(new char[options.buffer_bytes]) {}
  uint64_t id = 0;
  ucred cred;
  int agent;  // the agent's socket
  int inner;  // the relay's end of the pair whose other end gRPC holds
  H2SettingsGate gate;
  const size_t capacity;
  // Agent to gRPC: bytes not yet written to gRPC, from up[0]; the first `forwarded` bytes of
  // the agent's stream have been written.
  std::unique_ptr<char[]> up;
  size_t up_len = 0;
  uint64_t forwarded = 0;
  // gRPC to the agent.
  std::unique_ptr<char[]> down;
  size_t down_len = 0;
  uint32_t agent_events = 0;
  uint32_t inner_events = 0;
  bool watched = false;
  std::string cut_why;

  size_t Releasable() const { return static_cast<size_t>(gate.released() - forwarded); }
};

absl::StatusOr<std::unique_ptr<ConnectionRelay>> ConnectionRelay::Start(
    ConnectionRelayOptions options) {
  const int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd < 0) return absl::ErrnoToStatus(errno, "epoll_create1 for the connection relay");
  const int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) {
    const int saved = errno;
    close(epoll_fd);
    return absl::ErrnoToStatus(saved, "eventfd for the connection relay");
  }
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = kWake;
  if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, wake, &event) != 0) {
    const int saved = errno;
    close(wake);
    close(epoll_fd);
    return absl::ErrnoToStatus(saved, "epoll_ctl for the connection relay");
  }
  std::unique_ptr<ConnectionRelay> relay(new ConnectionRelay(std::move(options), epoll_fd, wake));
  relay->thread_ = std::thread([raw = relay.get()] { raw->Loop(); });
  return relay;
}

ConnectionRelay::ConnectionRelay(ConnectionRelayOptions options, int epoll_fd, int wake_fd)
    : options_(std::move(options)), epoll_fd_(epoll_fd), wake_fd_(wake_fd) {}

ConnectionRelay::~ConnectionRelay() { Stop(); }

absl::StatusOr<int> ConnectionRelay::Add(int agent_fd, const ucred& cred) {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) != 0) {
    const int saved = errno;
    close(agent_fd);
    return absl::ErrnoToStatus(saved, "socketpair for a relayed connection");
  }
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) {
      close(agent_fd);
      close(pair[0]);
      close(pair[1]);
      return absl::FailedPreconditionError("the connection relay has stopped");
    }
    pending_.push_back(std::make_unique<Connection>(cred, agent_fd, pair[1], options_));
    ++count_;
  }
  const uint64_t one = 1;
  if (write(wake_fd_, &one, sizeof(one)) != sizeof(one)) {
    // Adding 1 to an eventfd only fails on a bad descriptor, which would be a bug here.
    std::fprintf(stderr, "leashd: waking the connection relay failed: %s\n", std::strerror(errno));
  }
  return pair[0];
}

size_t ConnectionRelay::connections() const {
  absl::MutexLock lock(&mu_);
  return count_;
}

void ConnectionRelay::Adopt() {
  std::vector<std::unique_ptr<Connection>> adopted;
  {
    absl::MutexLock lock(&mu_);
    adopted.swap(pending_);
  }
  for (std::unique_ptr<Connection>& connection : adopted) {
    connection->id = next_id_++;
    Connection& raw = *connection;
    live_[raw.id] = std::move(connection);
    Watch(raw);
  }
}

bool ConnectionRelay::Pump(Connection& c) {
  for (bool moved = true; moved;) {
    moved = false;
    if (c.up_len < c.capacity) {
      const ssize_t n = read(c.agent, c.up.get() + c.up_len, c.capacity - c.up_len);
      if (n == 0 || (n < 0 && !Retry())) return false;
      if (n > 0) {
        const auto state =
            c.gate.Scan(absl::string_view(c.up.get() + c.up_len, static_cast<size_t>(n)));
        c.up_len += static_cast<size_t>(n);
        moved = true;
        if (state == H2SettingsGate::State::kRefused) {
          c.cut_why = c.gate.why();
          return false;
        }
      }
    }
    if (const size_t releasable = c.Releasable(); releasable > 0) {
      const ssize_t n = send(c.inner, c.up.get(), releasable, MSG_NOSIGNAL);
      if (n < 0 && !Retry()) return false;
      if (n > 0) {
        std::memmove(c.up.get(), c.up.get() + n, c.up_len - static_cast<size_t>(n));
        c.up_len -= static_cast<size_t>(n);
        c.forwarded += static_cast<uint64_t>(n);
        moved = true;
      }
    }
    if (c.down_len < c.capacity) {
      const ssize_t n = read(c.inner, c.down.get() + c.down_len, c.capacity - c.down_len);
      if (n == 0 || (n < 0 && !Retry())) return false;
      if (n > 0) {
        // gRPC's first frame is its SETTINGS: an ACK the agent sends from now on is one gRPC
        // takes as acknowledging them.
        c.gate.ServerSettingsSent();
        c.down_len += static_cast<size_t>(n);
        moved = true;
      }
    }
    if (c.down_len > 0) {
      const ssize_t n = send(c.agent, c.down.get(), c.down_len, MSG_NOSIGNAL);
      if (n < 0 && !Retry()) return false;
      if (n > 0) {
        std::memmove(c.down.get(), c.down.get() + n, c.down_len - static_cast<size_t>(n));
        c.down_len -= static_cast<size_t>(n);
        moved = true;
      }
    }
  }
  if (c.gate.state() == H2SettingsGate::State::kHolding && c.up_len == c.capacity &&
      c.Releasable() == 0) {
    c.cut_why = absl::StrCat("opened more than ", options_.max_streams_before_ack,
                             " calls on one connection without acknowledging the server's "
                             "HTTP/2 SETTINGS (which bound the calls it may open)");
    return false;
  }
  return true;
}

void ConnectionRelay::Watch(Connection& c) {
  const uint32_t agent_events =
      EPOLLRDHUP | (c.up_len < c.capacity ? EPOLLIN : 0u) | (c.down_len > 0 ? EPOLLOUT : 0u);
  const uint32_t inner_events =
      EPOLLRDHUP | (c.down_len < c.capacity ? EPOLLIN : 0u) | (c.Releasable() > 0 ? EPOLLOUT : 0u);
  const int op = c.watched ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
  epoll_event event{};
  if (!c.watched || agent_events != c.agent_events) {
    event.events = agent_events;
    event.data.u64 = c.id << 1;
    epoll_ctl(epoll_fd_, op, c.agent, &event);
    c.agent_events = agent_events;
  }
  if (!c.watched || inner_events != c.inner_events) {
    event.events = inner_events;
    event.data.u64 = (c.id << 1) | 1;
    epoll_ctl(epoll_fd_, op, c.inner, &event);
    c.inner_events = inner_events;
  }
  c.watched = true;
}

void ConnectionRelay::Close(uint64_t id) {
  auto it = live_.find(id);
  if (it == live_.end()) return;
  // Closing removes both from the epoll set: the relay holds the only references.
  close(it->second->agent);
  close(it->second->inner);
  live_.erase(it);
  absl::MutexLock lock(&mu_);
  --count_;
}

void ConnectionRelay::Loop() {
  epoll_event events[64];
  while (true) {
    const int n = epoll_wait(epoll_fd_, events, 64, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::fprintf(stderr, "leashd: connection relay: epoll_wait: %s\n", std::strerror(errno));
      return;
    }
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u64 == kWake) {
        uint64_t count = 0;
        if (read(wake_fd_, &count, sizeof(count)) < 0 && errno != EAGAIN) continue;
        {
          absl::MutexLock lock(&mu_);
          if (stopped_) return;
        }
        Adopt();
        continue;
      }
      const uint64_t id = events[i].data.u64 >> 1;
      auto it = live_.find(id);
      if (it == live_.end()) continue;  // closed earlier in this batch
      Connection& c = *it->second;
      // A hang-up or error on either side ends the connection, after a last move of what can go.
      const bool open = Pump(c) && (events[i].events & kClosing) == 0;
      if (open) {
        Watch(c);
        continue;
      }
      const ucred cred = c.cred;
      const std::string why = c.cut_why;
      Close(id);
      if (!why.empty() && options_.on_cut) options_.on_cut(cred, why);
    }
  }
}

void ConnectionRelay::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  const uint64_t one = 1;
  if (write(wake_fd_, &one, sizeof(one)) != sizeof(one)) {
    std::fprintf(stderr, "leashd: stopping the connection relay failed: %s\n",
                 std::strerror(errno));
  }
  if (thread_.joinable()) thread_.join();
  std::vector<uint64_t> ids;
  for (const auto& [id, connection] : live_) ids.push_back(id);
  for (uint64_t id : ids) Close(id);
  std::vector<std::unique_ptr<Connection>> pending;
  {
    absl::MutexLock lock(&mu_);
    pending.swap(pending_);
    count_ -= pending.size();
  }
  for (const std::unique_ptr<Connection>& connection : pending) {
    close(connection->agent);
    close(connection->inner);
  }
  close(wake_fd_);
  close(epoll_fd_);
}

}  // namespace leash::controlplane
