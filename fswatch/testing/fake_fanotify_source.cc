#include "fswatch/testing/fake_fanotify_source.h"

#include <sys/fanotify.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace leash::fswatch::testing {

int FakeFanotifySource::Push(FakeEvent event) {
  std::lock_guard<std::mutex> lock(mu_);
  const int fd = next_fd_++;
  queue_.push_back(Queued{fd, event.mask});
  events_[fd] = std::move(event);
  return fd;
}

int FakeFanotifySource::PushOpen(pid_t pid, uint32_t uid, std::string path) {
  FakeEvent event;
  event.mask = FAN_OPEN_PERM;
  event.pid = pid;
  event.creds = Creds{uid, uid, uid, uid};
  event.path = std::move(path);
  event.facts.regular = true;
  event.facts.nlink = 1;
  event.facts.uid = 0;
  event.facts.mode = S_IFREG | 0644;
  event.facts.mount = FileFacts::Mount::kOurs;
  return Push(std::move(event));
}

int FakeFanotifySource::PushExec(pid_t pid, uint32_t uid, std::string path) {
  FakeEvent event;
  event.mask = FAN_OPEN_EXEC_PERM;
  event.pid = pid;
  event.creds = Creds{uid, uid, uid, uid};
  event.path = std::move(path);
  event.facts.regular = true;
  event.facts.mode = S_IFREG | 0755;
  event.facts.mount = FileFacts::Mount::kOurs;
  return Push(std::move(event));
}

void FakeFanotifySource::PushOverflow() {
  std::lock_guard<std::mutex> lock(mu_);
  queue_.push_back(Queued{FAN_NOFD, FAN_Q_OVERFLOW});
}

void FakeFanotifySource::PushUnopenable(int error) {
  FakeEvent nobody;
  nobody.pid = 0;
  PushUnopenable(error, std::move(nobody));
}

void FakeFanotifySource::PushUnopenable(int error, FakeEvent process) {
  std::lock_guard<std::mutex> lock(mu_);
  queue_.push_back(Queued{FAN_NOFD, 0, error, process.pid});
  if (process.pid > 0) unopenable_[process.pid] = std::move(process);
}

std::vector<Answer> FakeFanotifySource::answers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return answers_;
}

bool FakeFanotifySource::AnswerFor(int fd, bool& allow) const {
  std::lock_guard<std::mutex> lock(mu_);
  int found = 0;
  for (const Answer& answer : answers_) {
    if (answer.fd != fd) continue;
    ++found;
    allow = answer.allow;
  }
  return found == 1;
}

size_t FakeFanotifySource::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

bool FakeFanotifySource::AllReleasedOnce() const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [fd, event] : events_) {
    auto it = released_.find(fd);
    if (it == released_.end() || it->second != 1) return false;
  }
  return true;
}

std::set<std::string> FakeFanotifySource::marked() const {
  std::lock_guard<std::mutex> lock(mu_);
  return marks_;
}

void FakeFanotifySource::FailMark(const std::string& path, int error) {
  std::lock_guard<std::mutex> lock(mu_);
  mark_failures_[path] = error;
}

int FakeFanotifySource::ReadEvents(absl::Span<FanEvent> out, int timeout_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  while (n < out.size() && !queue_.empty()) {
    const auto [fd, mask, open_error, pid] = queue_.front();
    queue_.pop_front();
    FanEvent& event = out[n++];
    event = FanEvent{};
    event.mask = mask;
    event.fd = fd;
    event.open_error = open_error;
    event.pidfd = FanEvent::kNoPidfd;
    auto it = events_.find(fd);
    event.pid = it == events_.end() ? pid : it->second.pid;
  }
  return static_cast<int>(n);
}

int FakeFanotifySource::Respond(const FanEvent& event, bool allow) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = events_.find(event.fd);
  if (it == events_.end()) return ENOENT;
  if (released_.count(event.fd)) return EBADF;  // answering after release is a bug
  answers_.push_back(Answer{event.fd, allow});
  return it->second.respond_error;
}

void FakeFanotifySource::ReleaseAll(absl::Span<const FanEvent> events) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const FanEvent& event : events) {
    if (event.fd >= 0) ++released_[event.fd];
  }
}

int FakeFanotifySource::CredsOf(const FanEvent& event, Creds& out) {
  if (on_creds_) on_creds_(event.fd);
  std::lock_guard<std::mutex> lock(mu_);
  const std::map<int, FakeEvent>::const_iterator it = events_.find(event.fd);
  const FakeEvent* found = it != events_.end() ? &it->second : nullptr;
  if (found == nullptr && event.fd < 0) {
    auto by_pid = unopenable_.find(event.pid);
    if (by_pid != unopenable_.end()) found = &by_pid->second;
  }
  if (found == nullptr) return EBADF;
  if (found->creds_error != 0) return found->creds_error;
  out = found->creds;
  return 0;
}

int FakeFanotifySource::ContentOf(const FanEvent& event, size_t limit, std::string& out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = events_.find(event.fd);
  if (it == events_.end() || released_.count(event.fd)) return EBADF;
  if (it->second.content_error != 0) return it->second.content_error;
  if (it->second.content.size() > limit) return EFBIG;
  out = it->second.content;
  return 0;
}

int FakeFanotifySource::PathOf(const FanEvent& event, char* buffer, size_t capacity,
                               size_t& len) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = events_.find(event.fd);
  if (it == events_.end()) return EBADF;
  if (released_.count(event.fd)) return EBADF;
  if (it->second.path_error != 0) return it->second.path_error;
  if (it->second.path.size() >= capacity) return ENAMETOOLONG;
  memcpy(buffer, it->second.path.data(), it->second.path.size());
  len = it->second.path.size();
  return 0;
}

int FakeFanotifySource::FactsOf(const FanEvent& event, FileFacts& out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = events_.find(event.fd);
  if (it == events_.end()) return EBADF;
  if (it->second.facts_error != 0) return it->second.facts_error;
  out = it->second.facts;
  return 0;
}

int FakeFanotifySource::IsRootControlled(const FanEvent& event, absl::string_view path,
                                         const FileFacts& facts, bool& out) {
  std::lock_guard<std::mutex> lock(mu_);
  ++exec_fact_calls_;
  auto it = events_.find(event.fd);
  if (it == events_.end()) return EBADF;
  out = it->second.root_controlled;
  return 0;
}

int FakeFanotifySource::ElfInterpreterOf(const FanEvent& event, char* buffer, size_t capacity,
                                         size_t& len) {
  std::lock_guard<std::mutex> lock(mu_);
  ++exec_fact_calls_;
  len = 0;
  auto it = events_.find(event.fd);
  if (it == events_.end()) return EBADF;
  const std::string& interp = it->second.elf_interpreter;
  if (interp.size() > capacity) return 0;
  memcpy(buffer, interp.data(), interp.size());
  len = interp.size();
  return 0;
}

int FakeFanotifySource::HostIdentityOf(const char* path, uint64_t& dev, uint64_t& ino) {
  std::lock_guard<std::mutex> lock(mu_);
  ++exec_fact_calls_;
  auto it = identities_.find(path);
  if (it == identities_.end()) return ENOENT;
  dev = it->second.first;
  ino = it->second.second;
  return 0;
}

int FakeFanotifySource::IsLoadingElfInterpreter(const FanEvent& event, bool& out) {
  std::lock_guard<std::mutex> lock(mu_);
  ++exec_fact_calls_;
  auto it = events_.find(event.fd);
  if (it == events_.end()) return EBADF;
  out = it->second.loading_elf_interpreter;
  return it->second.loading_error;
}

absl::Status FakeFanotifySource::MarkFilesystem(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  auto failure = mark_failures_.find(path);
  if (failure != mark_failures_.end()) {
    return absl::ErrnoToStatus(failure->second, absl::StrCat("fanotify_mark ", path));
  }
  marks_.insert(path);
  return absl::OkStatus();
}

absl::Status FakeFanotifySource::UnmarkFilesystem(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  if (marks_.erase(path) == 0) {
    return absl::NotFoundError(absl::StrCat("no mark on ", path));
  }
  return absl::OkStatus();
}

}  // namespace leash::fswatch::testing
