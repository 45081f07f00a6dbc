// The addresses each subject's DNS filter handed out, by name, for as long as their TTL: what
// the proxy connects to when a connection is allowed on that name, so that the agent and the
// proxy see the same addresses for a name — no second, divergent lookup within the TTL (which
// a name answering differently on each ask would otherwise turn into a connection to an
// address the agent was never given). Loop thread only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "engine/ip_address.h"

namespace leash::proxy {

class DnsAnswerCache {
 public:
  // `max_names_per_subject`: names kept per subject; a full subject drops its expired names,
  // then its oldest-expiring ones, so one agent asking for endless names affects only itself.
  explicit DnsAnswerCache(size_t max_names_per_subject = 4096)
      : max_names_(max_names_per_subject) {}

  // Keeps the answer `uid` was given for `name` to one address family's question (A: IPv4,
  // AAAA: IPv6): `addresses` (all of that family) until `expires`. An answer replaces the
  // earlier one of its family.
  void Store(uint32_t uid, const std::string& name, engine::IpAddress::Family family,
             std::vector<engine::IpAddress> addresses, absl::Time expires);

  // The addresses `uid` was given for `name` that are still within their TTL at `now`, IPv6
  // first when both families are there (the order getaddrinfo prefers); empty when none.
  std::vector<engine::IpAddress> Lookup(uint32_t uid, const std::string& name, absl::Time now) const;

  size_t size(uint32_t uid) const;

 private:
  struct Answer {
    std::vector<engine::IpAddress> addresses;
    absl::Time expires = absl::InfinitePast();
  };
  struct Entry {
    Answer v4;
    Answer v6;
    absl::Time Latest() const { return std::max(v4.expires, v6.expires); }
  };
  using Names = absl::flat_hash_map<std::string, Entry>;
  void MakeRoom(Names& names, absl::Time now);

  const size_t max_names_;
  absl::flat_hash_map<uint32_t, Names> subjects_;
};

}  // namespace leash::proxy
