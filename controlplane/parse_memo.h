// The last parse of each file's text, so a reconcile that re-reads files which did not change
// does not parse them again (YAML parsing is most of a pass's time at 1,000 subjects). Keyed by
// the exact bytes: the same text always yields the same result, so reusing it is invisible.
// Thread-safe.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace leash::controlplane {

template <typename T>
class ParseMemo {
 public:
  // The result of `parse` for `text` as the file `key`, parsed again only if `text` differs
  // from the text last seen for `key`.
  T Get(const std::string& key, const std::string& text, const std::function<T()>& parse) {
    {
      absl::MutexLock lock(&mu_);
      auto it = entries_.find(key);
      if (it != entries_.end() && it->second.first == text) return it->second.second;
    }
    T parsed = parse();
    absl::MutexLock lock(&mu_);
    entries_[key] = {text, parsed};
    return parsed;
  }

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::pair<std::string, T>> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leash::controlplane
