// Name resolution the proxy does itself (docs/ARCHITECTURE.md, rule N5): when a decision is
// made on a name, the proxy connects to an address it resolved rather than the one the agent
// supplied, so `allow: github.com` cannot reach an arbitrary IP behind a forged SNI.
//
// ThreadPoolResolver runs the blocking lookup (getaddrinfo: the host's own /etc/hosts and
// resolv.conf) on a small fixed pool of worker threads and delivers each answer back on the
// event loop, so a slow resolver stalls only the connections waiting on that name — never the
// loop, and never connections decided on an address. Answers are cached for a fixed time
// (getaddrinfo reports no TTL), concurrent lookups of one name are coalesced, and the cache is
// bounded. Lookups wait in one queue per requester (the subject's UID) and the workers take
// from the queues in turn, so one agent asking for thousands of names delays another agent's
// lookup by at most one lookup per busy requester, not by its whole backlog. One requester
// never holds every worker (at most threads - 1 of them at once), so slow names of its own —
// a zone it controls that answers after glibc's time-outs — cannot starve everyone else's
// lookups. A requester with max_pending_per_requester names waiting is refused more at once,
// and a queued name nobody waits for any more is dropped unlooked-up.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "engine/ip_address.h"
#include "proxy/event_loop.h"

namespace leash::proxy {

struct ResolveResult {
  absl::Status status;
  // In the resolver's preference order (getaddrinfo's RFC 6724 sort), without duplicates.
  std::vector<engine::IpAddress> addresses;
};

class ResolveWaiter {
 public:
  virtual void OnResolved(const ResolveResult& result) = 0;

 protected:
  ~ResolveWaiter() = default;
};

class Resolver {
 public:
  virtual ~Resolver() = default;
  // Loop thread only. Returns the answer at once when it is cached (or when `requester` has
  // too many lookups waiting: a ResourceExhausted result); otherwise nullopt, and
  // `waiter->OnResolved` runs on the loop thread later — unless Cancel() came first.
  virtual std::optional<ResolveResult> Resolve(const std::string& name, uint32_t requester,
                                               ResolveWaiter* waiter) = 0;
  // Loop thread only. After it returns, `waiter` is never called for `name`.
  virtual void Cancel(const std::string& name, ResolveWaiter* waiter) = 0;
};

// A blocking lookup: getaddrinfo, or a test's table.
using LookupFn = std::function<ResolveResult(const std::string& name)>;

// getaddrinfo(name, AF_UNSPEC, SOCK_STREAM); errors name the host and gai_strerror.
ResolveResult GetaddrinfoLookup(const std::string& name);

struct ResolverOptions {
  int threads = 4;
  absl::Duration positive_ttl = absl::Seconds(30);
  absl::Duration negative_ttl = absl::Seconds(2);
  size_t max_cached_names = 4096;
  // Names one requester may have queued or in lookup at once.
  size_t max_pending_per_requester = 256;
  LookupFn lookup = GetaddrinfoLookup;
};

class ThreadPoolResolver final : public Resolver {
 public:
  // `loop` must outlive the resolver. Starts the workers.
  ThreadPoolResolver(EventLoop* loop, ResolverOptions options);
  // Stops the workers (waits for lookups in progress).
  ~ThreadPoolResolver() override;

  std::optional<ResolveResult> Resolve(const std::string& name, uint32_t requester,
                                       ResolveWaiter* waiter) override;
  void Cancel(const std::string& name, ResolveWaiter* waiter) override;

  // Lookups started (not answered from the cache); loop thread.
  uint64_t lookups() const { return lookups_; }

 private:
  struct Entry {
    bool in_flight = false;
    // Whose queue the lookup went on (counted against it until answered).
    uint32_t requester = 0;
    absl::Time expires;
    ResolveResult result;
    std::vector<ResolveWaiter*> waiters;
  };
  void Enqueue(uint32_t requester, const std::string& name);
  void Work();
  void Complete(const std::string& name, ResolveResult result);
  // A queued lookup a worker skipped because nobody waited for it (loop thread).
  void Dropped(const std::string& name);
  // One lookup of `requester`'s has ended (answered or dropped).
  void ReleasePending(uint32_t requester);
  void Evict();

  EventLoop* const loop_;
  const ResolverOptions options_;
  // Loop thread only.
  absl::flat_hash_map<std::string, Entry> cache_;
  absl::flat_hash_map<uint32_t, size_t> pending_;  // lookups queued or running, per requester
  uint64_t lookups_ = 0;

  std::mutex mu_;
  std::condition_variable wake_;
  absl::flat_hash_map<uint32_t, std::deque<std::string>> queues_;
  // Requesters with names queued, in the order the workers serve them.
  std::deque<uint32_t> turns_;
  // Lookups running now, per requester; a requester at running_cap_ waits its turn.
  absl::flat_hash_map<uint32_t, int> running_;
  const int running_cap_;
  // Queued names whose every waiter cancelled: skipped, answered as dropped.
  absl::flat_hash_set<std::string> abandoned_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace leash::proxy
