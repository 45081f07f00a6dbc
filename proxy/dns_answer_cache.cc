#include "proxy/dns_answer_cache.h"

#include <algorithm>

namespace leash::proxy {

void DnsAnswerCache::Store(uint32_t uid, const std::string& name, engine::IpAddress::Family family,
                           std::vector<engine::IpAddress> addresses, absl::Time expires) {
  Names& names = subjects_[uid];
  auto it = names.find(name);
  if (it == names.end()) {
    if (names.size() >= max_names_) MakeRoom(names, absl::Now());
    it = names.emplace(name, Entry()).first;
  }
  Answer& answer = family == engine::IpAddress::Family::kV4 ? it->second.v4 : it->second.v6;
  answer.addresses = std::move(addresses);
  answer.expires = expires;
}

std::vector<engine::IpAddress> DnsAnswerCache::Lookup(uint32_t uid, const std::string& name,
                                                      absl::Time now) const {
  std::vector<engine::IpAddress> out;
  auto subject = subjects_.find(uid);
  if (subject == subjects_.end()) return out;
  auto it = subject->second.find(name);
  if (it == subject->second.end()) return out;
  for (const Answer* answer : {&it->second.v6, &it->second.v4}) {
    if (answer->expires > now) out.insert(out.end(), answer->addresses.begin(), answer->addresses.end());
  }
  return out;
}

size_t DnsAnswerCache::size(uint32_t uid) const {
  auto subject = subjects_.find(uid);
  return subject == subjects_.end() ? 0 : subject->second.size();
}

void DnsAnswerCache::MakeRoom(Names& names, absl::Time now) {
  for (auto it = names.begin(); it != names.end();) {
    auto next = std::next(it);
    if (it->second.Latest() <= now) names.erase(it);
    it = next;
  }
  if (names.size() < max_names_) return;
  // Still full of live answers: drop the one that would expire first.
  auto oldest = std::min_element(names.begin(), names.end(), [](const auto& a, const auto& b) {
    return a.second.Latest() < b.second.Latest();
  });
  names.erase(oldest);
}

}  // namespace leash::proxy
