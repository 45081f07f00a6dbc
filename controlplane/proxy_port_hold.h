// leashd's hold on the proxy's ports: for every P of the reserved range, a TCP socket bound
// (not listening) on 127.0.0.1:P and on [::1]:P — the redirect's targets — and one on the
// wildcard (:: dual stack, or 0.0.0.0 without IPv6), for as long as leashd runs; and the same
// three UDP sockets, the targets of each subject's DNS redirect (its DNS filter's sockets). The first two
// are handed to every leash-proxy it spawns, which listen()s the ones of ports handed to
// subjects, so a listener is bound once, by leashd, and outlives a proxy that dies; the
// wildcard stays with leashd and covers every other address (127.0.0.2, the host's own).
// A port nobody was handed stays bound but not listening: a connection to it is reset.
//
// UDP is held for the same reason as TCP: a process that bound a subject's UDP port would
// receive that subject's DNS questions and could answer them with anything.
//
// All three set SO_REUSEPORT (so they can share the port: the kernel lets SO_REUSEPORT
// sockets of one UID share it) and not SO_REUSEADDR (two SO_REUSEADDR sockets that do not
// listen may share a port whatever their UID). Any other UID's bind of P, on any address,
// with any options, then finds a conflict; only root could join, and root needs no port trick.
//
// What it cannot hold: a port another process bound while leashd was not running. That one is
// reported as missing; the proxy gets no socket for it, so a subject given it is acked as a
// failed listener and its chain resets its TCP (fail closed). leashd tries the missing ones
// again before every reconcile (TakeMissing), so a port is back in its hands on the first pass
// after that process lets go.
//
// Across a restart under systemd the sockets are not closed at all: leashd puts every one in
// the service's file-descriptor store, and the next leashd takes them back (Adopt).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "engine/reserved_ports.h"

namespace leash::controlplane {

class ProxyPortHold {
 public:
  struct Options {
    // The proxy's listen addresses: where nftables' `redirect` sends a subject's TCP.
    std::string ipv4_address = "127.0.0.1";
    std::string ipv6_address = "::1";
    uint16_t first_port = engine::kProxyPortFirst;
    uint16_t last_port = engine::kProxyPortLast;
  };

  // A port of the range that could not be bound on one address.
  struct Missing {
    std::string address;
    uint16_t port = 0;
    int error = 0;  // errno of bind(2) (EADDRINUSE: someone else holds it)
    // 127.0.0.1 or ::1, where the redirect sends a subject's TCP (false: the wildcard, which
    // fails when another process holds the port on some other address of the host).
    bool redirect_target = true;
    bool udp = false;
  };

  explicit ProxyPortHold(Options options);
  ProxyPortHold() : ProxyPortHold(Options()) {}
  ~ProxyPortHold();  // closes every held socket
  ProxyPortHold(const ProxyPortHold&) = delete;
  ProxyPortHold& operator=(const ProxyPortHold&) = delete;

  // Binds every (address, port) of the range not held yet. A bind that fails is tried again up
  // to `attempts` times in all, `between` apart (a process binding and releasing ports in a loop
  // holds each one only for an instant). Returns what is still not held. An address family the
  // host does not have (no IPv6, or no ::1 on lo) is not missing: nothing can be redirected
  // there, and nobody can bind it either.
  std::vector<Missing> TakeMissing(int attempts = 1, absl::Duration between = absl::ZeroDuration());

  // Takes `fd`, a socket a previous leashd held (from systemd's file-descriptor store), into
  // the slot its protocol, address and port name. InvalidArgument (and `fd` untouched) when it
  // is not one of this hold's sockets or its slot is already held: the caller closes it.
  absl::Status Adopt(int fd);

  // Every held descriptor, the wildcards included: what goes into systemd's store.
  std::vector<int> AllDescriptors() const;

  // The held redirect-target descriptors (close-on-exec): TCP IPv4 ports ascending, then IPv6,
  // then the same for UDP: what a proxy spawn inherits.
  std::vector<int> Descriptors() const;
  size_t held() const;
  // Whether `port` is held, TCP and UDP, on every redirect target there is (a port outside the
  // range: false). The wildcard does not count: a redirect never reaches another address.
  bool Holds(uint16_t port) const;
  bool ipv6_available() const { return ipv6_available_; }
  // Redirect-target sockets for the whole range (four per port — TCP and UDP on 127.0.0.1 and
  // ::1 — two without IPv6): what a proxy inherits when nothing is missing.
  size_t wanted() const;
  // Every socket held, the wildcards included.
  size_t total() const;
  // Every socket wanted, the wildcards (two per port) included.
  size_t total_wanted() const { return wanted() + 2 * ports(); }
  // Ports in the range.
  size_t ports() const { return tcp_.v4.size(); }

  // "127.0.0.1:18004, [::1]:18004-18007 (Address already in use)": the missing ones, ranges
  // folded, for a log line.
  static std::string Describe(const std::vector<Missing>& missing);

 private:
  const Options options_;
  bool ipv6_available_ = true;
  // Per protocol, indexed by port - first_port; -1 while not held.
  struct Sockets {
    std::vector<int> v4;
    std::vector<int> v6;
    std::vector<int> any;
  };
  Sockets tcp_;
  Sockets udp_;
};

}  // namespace leash::controlplane
