#include "proxy/resolver.h"

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "proxy/socket_address.h"

namespace leash::proxy {

ResolveResult GetaddrinfoLookup(const std::string& name) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  const int rc = getaddrinfo(name.c_str(), nullptr, &hints, &list);
  ResolveResult result;
  if (rc != 0) {
    const absl::string_view what = rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc);
    // EAI_NONAME / EAI_NODATA: the name does not exist; anything else: the resolver failed.
    result.status = (rc == EAI_NONAME || rc == EAI_NODATA)
                        ? absl::NotFoundError(absl::StrCat("no address for ", name, ": ", what))
                        : absl::UnavailableError(absl::StrCat("resolving ", name, ": ", what));
    return result;
  }
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    SocketAddress address;
    if (!FromSockaddr(ai->ai_addr, ai->ai_addrlen, &address)) continue;
    if (std::find(result.addresses.begin(), result.addresses.end(), address.ip) ==
        result.addresses.end()) {
      result.addresses.push_back(address.ip);
    }
  }
  freeaddrinfo(list);
  if (result.addresses.empty()) {
    result.status = absl::NotFoundError(absl::StrCat("no IPv4 or IPv6 address for ", name));
  }
  return result;
}

ThreadPoolResolver::ThreadPoolResolver(EventLoop* loop, ResolverOptions options)
    : loop_(loop),
      options_(std::move(options)),
      running_cap_(std::max(1, options_.threads - 1)) {
  for (int i = 0; i < std::max(1, options_.threads); ++i) {
    workers_.emplace_back([this] { Work(); });
  }
}

ThreadPoolResolver::~ThreadPoolResolver() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

std::optional<ResolveResult> ThreadPoolResolver::Resolve(const std::string& name,
                                                         uint32_t requester,
                                                         ResolveWaiter* waiter) {
  auto it = cache_.find(name);
  if (it != cache_.end()) {
    Entry& entry = it->second;
    if (entry.in_flight) {
      if (entry.waiters.empty()) {
        // Abandoned while queued, wanted again before a worker reached it.
        std::lock_guard<std::mutex> lock(mu_);
        abandoned_.erase(name);
      }
      entry.waiters.push_back(waiter);
      return std::nullopt;
    }
    if (entry.expires > loop_->now()) return entry.result;
  }
  size_t& pending = pending_[requester];
  if (pending >= options_.max_pending_per_requester) {
    ResolveResult refused;
    refused.status = absl::ResourceExhaustedError(absl::StrCat(
        "this subject already has ", pending, " names waiting to be resolved (the most one "
        "subject may have, so that it cannot delay the others')"));
    return refused;
  }
  if (it == cache_.end()) {
    if (cache_.size() >= options_.max_cached_names) Evict();
    it = cache_.emplace(name, Entry{}).first;
  }
  Entry& entry = it->second;
  entry.in_flight = true;
  entry.requester = requester;
  entry.waiters.push_back(waiter);
  ++pending;
  ++lookups_;
  Enqueue(requester, name);
  return std::nullopt;
}

void ThreadPoolResolver::Enqueue(uint32_t requester, const std::string& name) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::deque<std::string>& queue = queues_[requester];
    if (queue.empty()) turns_.push_back(requester);
    queue.push_back(name);
  }
  wake_.notify_one();
}

void ThreadPoolResolver::Cancel(const std::string& name, ResolveWaiter* waiter) {
  auto it = cache_.find(name);
  if (it == cache_.end()) return;
  auto& waiters = it->second.waiters;
  waiters.erase(std::remove(waiters.begin(), waiters.end(), waiter), waiters.end());
  if (waiters.empty() && it->second.in_flight) {
    std::lock_guard<std::mutex> lock(mu_);
    abandoned_.insert(name);
  }
}

void ThreadPoolResolver::Work() {
  while (true) {
    std::string name;
    uint32_t requester = 0;
    bool dropped = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // The first requester in turn that is below its cap of running lookups.
      auto eligible = turns_.end();
      wake_.wait(lock, [&] {
        if (stopping_) return true;
        eligible = std::find_if(turns_.begin(), turns_.end(), [this](uint32_t r) {
          auto running = running_.find(r);
          return running == running_.end() || running->second < running_cap_;
        });
        return eligible != turns_.end();
      });
      if (stopping_) return;
      // One name from that requester; it goes to the back if it has more.
      requester = *eligible;
      turns_.erase(eligible);
      std::deque<std::string>& queue = queues_[requester];
      name = std::move(queue.front());
      queue.pop_front();
      if (queue.empty()) {
        queues_.erase(requester);
      } else {
        turns_.push_back(requester);
      }
      dropped = abandoned_.erase(name) > 0;
      if (!dropped) ++running_[requester];
    }
    if (dropped) {
      loop_->Post([this, name = std::move(name)] { Dropped(name); });
      continue;
    }
    ResolveResult result = options_.lookup(name);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--running_[requester] == 0) running_.erase(requester);
    }
    wake_.notify_all();  // a requester at its cap may have a name another worker can take now
    loop_->Post([this, name = std::move(name), result = std::move(result)]() mutable {
      Complete(name, std::move(result));
    });
  }
}

void ThreadPoolResolver::ReleasePending(uint32_t requester) {
  auto pending = pending_.find(requester);
  if (pending != pending_.end() && --pending->second == 0) pending_.erase(pending);
}

void ThreadPoolResolver::Dropped(const std::string& name) {
  auto it = cache_.find(name);
  if (it == cache_.end()) return;
  Entry& entry = it->second;
  if (!entry.waiters.empty()) {
    // Wanted again after a worker had already set it aside: it goes back in its queue.
    Enqueue(entry.requester, name);
    return;
  }
  // Nobody waits: no answer is left behind, and the next ask looks the name up afresh.
  ReleasePending(entry.requester);
  cache_.erase(it);
}

void ThreadPoolResolver::Complete(const std::string& name, ResolveResult result) {
  auto it = cache_.find(name);
  if (it == cache_.end()) return;
  Entry& entry = it->second;
  entry.in_flight = false;
  ReleasePending(entry.requester);
  entry.expires =
      loop_->now() + (result.status.ok() ? options_.positive_ttl : options_.negative_ttl);
  entry.result = std::move(result);
  // A waiter may cancel another waiter or start a new lookup while being told: take the list.
  std::vector<ResolveWaiter*> waiters;
  waiters.swap(entry.waiters);
  const ResolveResult answer = entry.result;
  for (ResolveWaiter* waiter : waiters) waiter->OnResolved(answer);
}

void ThreadPoolResolver::Evict() {
  const absl::Time now = loop_->now();
  for (auto it = cache_.begin(); it != cache_.end();) {
    auto next = std::next(it);
    if (!it->second.in_flight && it->second.expires <= now) cache_.erase(it);
    it = next;
  }
  // Still full of fresh answers: drop answers (never lookups in flight) until there is room.
  for (auto it = cache_.begin(); it != cache_.end() && cache_.size() >= options_.max_cached_names;) {
    auto next = std::next(it);
    if (!it->second.in_flight) cache_.erase(it);
    it = next;
  }
}

}  // namespace leash::proxy
