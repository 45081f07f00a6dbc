#include "proto/sidecar/would_be_blocks.h"

#include <algorithm>
#include <tuple>
#include <vector>

namespace leash::sidecar {

void WouldBeBlockCounter::Add(uint32_t uid, leash::v1::Surface surface) {
  absl::MutexLock lock(&mu_);
  ++counts_[{uid, static_cast<int>(surface)}];
}

uint64_t WouldBeBlockCounter::Count(uint32_t uid, leash::v1::Surface surface) const {
  absl::MutexLock lock(&mu_);
  auto it = counts_.find({uid, static_cast<int>(surface)});
  return it == counts_.end() ? 0 : it->second;
}

std::vector<leash::v1::WouldBeBlocks> WouldBeBlockCounter::Snapshot() const {
  std::vector<std::tuple<uint32_t, int, uint64_t>> counts;
  {
    absl::MutexLock lock(&mu_);
    counts.reserve(counts_.size());
    for (const auto& [key, count] : counts_) counts.emplace_back(key.first, key.second, count);
  }
  std::sort(counts.begin(), counts.end());
  std::vector<leash::v1::WouldBeBlocks> out(counts.size());
  for (size_t i = 0; i < counts.size(); ++i) {
    out[i].set_uid(std::get<0>(counts[i]));
    out[i].set_surface(static_cast<leash::v1::Surface>(std::get<1>(counts[i])));
    out[i].set_count(std::get<2>(counts[i]));
  }
  return out;
}

void WouldBeBlockCounter::Fill(
    google::protobuf::RepeatedPtrField<leash::v1::WouldBeBlocks>* out) const {
  std::vector<leash::v1::WouldBeBlocks> counts = Snapshot();
  out->Clear();
  out->Reserve(static_cast<int>(counts.size()));
  for (leash::v1::WouldBeBlocks& count : counts) *out->Add() = std::move(count);
}

}  // namespace leash::sidecar
