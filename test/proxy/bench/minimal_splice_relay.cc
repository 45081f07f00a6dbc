// The baseline leash-proxy is measured against: the smallest single-threaded transparent relay
// that does the same transport work — accept a redirected connection, read SO_ORIGINAL_DST,
// connect there (blocking: the simplest, and for sequential connections the fastest), then
// splice both directions through one pipe each on an edge-triggered epoll loop. No peek, no
// policy, no logging, no name resolution. Usage: minimal_splice_relay <port> (on 127.0.0.1)
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <fcntl.h>
#include <linux/netfilter_ipv4.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>

namespace {

struct Relay;
struct Side {
  Relay* relay;
  int index;
};
struct Relay {
  int fds[2];       // client, upstream
  int pipes[2][2];  // [direction][read, write]; direction d reads fds[d], writes fds[1 - d]
  int in_pipe[2] = {0, 0};
  bool eof[2] = {false, false};
  bool dead = false;
  Side sides[2];
};

// Moves what it can in direction d; false when the relay is over.
bool Pump(Relay* r, int d) {
  const int src = r->fds[d], dst = r->fds[1 - d];
  while (true) {
    if (r->in_pipe[d] > 0) {
      const ssize_t n = splice(r->pipes[d][0], nullptr, dst, nullptr, r->in_pipe[d],
                               SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n > 0) {
        r->in_pipe[d] -= n;
        continue;
      }
      return n < 0 && errno == EAGAIN;
    }
    if (r->eof[d]) return true;
    const ssize_t n =
        splice(src, nullptr, r->pipes[d][1], nullptr, 65536, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n > 0) {
      r->in_pipe[d] += n;
      continue;
    }
    if (n == 0) {
      r->eof[d] = true;
      shutdown(dst, SHUT_WR);
      return !r->eof[1 - d];
    }
    return errno == EAGAIN;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: minimal_splice_relay <port>\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  const int one = 1;
  const int listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(std::atoi(argv[1])));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listen_fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      listen(listen_fd, 4096) != 0) {
    std::perror("listen");
    return 1;
  }
  const int epoll_fd = epoll_create1(0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;
  epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &ev);
  epoll_event events[256];
  while (true) {
    const int n = epoll_wait(epoll_fd, events, 256, -1);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.ptr == nullptr) {
        while (true) {
          const int client = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK);
          if (client < 0) break;
          sockaddr_in original{};
          socklen_t length = sizeof(original);
          const int upstream = socket(AF_INET, SOCK_STREAM, 0);
          if (getsockopt(client, SOL_IP, SO_ORIGINAL_DST, &original, &length) != 0 ||
              connect(upstream, reinterpret_cast<sockaddr*>(&original), length) != 0) {
            close(client);
            close(upstream);
            continue;
          }
          fcntl(upstream, F_SETFL, O_NONBLOCK);
          setsockopt(upstream, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          auto* r = new Relay{};
          r->fds[0] = client;
          r->fds[1] = upstream;
          if (pipe2(r->pipes[0], O_NONBLOCK) != 0 || pipe2(r->pipes[1], O_NONBLOCK) != 0) {
            std::perror("pipe2");
            return 1;
          }
          for (int k = 0; k < 2; ++k) {
            r->sides[k] = Side{r, k};
            epoll_event watch{};
            watch.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
            watch.data.ptr = &r->sides[k];
            epoll_ctl(epoll_fd, EPOLL_CTL_ADD, r->fds[k], &watch);
          }
        }
        continue;
      }
      auto* side = static_cast<Side*>(events[i].data.ptr);
      Relay* r = side->relay;
      if (r->dead) continue;
      bool alive = true;
      if (events[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
        alive = Pump(r, side->index);
      }
      if (alive && (events[i].events & (EPOLLOUT | EPOLLHUP | EPOLLERR))) {
        alive = Pump(r, 1 - side->index);
      }
      if (!alive) {
        r->dead = true;  // freed after the batch would be cleaner; the baseline leaks the struct
        for (int k = 0; k < 2; ++k) {
          close(r->fds[k]);
          close(r->pipes[k][0]);
          close(r->pipes[k][1]);
        }
      }
    }
  }
}
