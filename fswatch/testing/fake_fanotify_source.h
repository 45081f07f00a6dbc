// A stateful fake of FanotifySource for unit tests of the watcher's logic: tests queue
// synthetic events, each with the process credentials, path and file facts the kernel would
// report, and then read back the answers given, the descriptors released and the marks held.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "fswatch/fanotify_source.h"

namespace leash::fswatch::testing {

struct FakeEvent {
  uint64_t mask = 0;
  pid_t pid = 1000;
  // Identity as the kernel would report it; creds_error != 0 makes CredsOf fail.
  Creds creds;
  int creds_error = 0;
  std::string path;
  int path_error = 0;
  FileFacts facts;
  int facts_error = 0;
  // What ContentOf reads (the file's bytes), or content_error.
  std::string content;
  int content_error = 0;
  int respond_error = 0;
  // Exec events: what IsRootControlled, ElfInterpreterOf and IsLoadingElfInterpreter find.
  bool root_controlled = true;
  std::string elf_interpreter;
  bool loading_elf_interpreter = false;
  int loading_error = 0;
};

struct Answer {
  int fd = -1;
  bool allow = false;
};

class FakeFanotifySource : public FanotifySource {
 public:
  FakeFanotifySource() = default;

  // Queues an event and returns the fd it will carry.
  int Push(FakeEvent event);
  int PushOpen(pid_t pid, uint32_t uid, std::string path);
  int PushExec(pid_t pid, uint32_t uid, std::string path);
  void PushOverflow();
  // An event whose file the kernel could not open for the watcher (it denied it itself): no
  // fd; `process` gives the pid (0: the kernel named none) and the credentials CredsOf finds.
  void PushUnopenable(int error);
  void PushUnopenable(int error, FakeEvent process);

  std::vector<Answer> answers() const;
  // The answer given for `fd`; fails the test (returns false) if none or more than one.
  bool AnswerFor(int fd, bool& allow) const;
  // The subject UID the watcher noted for the event with this fd (for a successor), if any.
  std::optional<uint32_t> NotedFor(int fd) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = noted_.find(fd);
    if (it == noted_.end()) return std::nullopt;
    return it->second;
  }
  size_t pending() const;
  // Every fd handed out was released exactly once.
  bool AllReleasedOnce() const;
  std::set<std::string> marked() const;
  // Makes the next MarkFilesystem(path) fail with `error`.
  void FailMark(const std::string& path, int error);

  void set_identity_method(IdentityMethod method) { method_ = method; }
  // What HostIdentityOf(path) finds (otherwise ENOENT).
  void SetIdentity(const std::string& path, uint64_t dev, uint64_t ino) {
    std::lock_guard<std::mutex> lock(mu_);
    identities_[path] = {dev, ino};
  }
  // How many times the watcher asked for exec-only facts (never per open).
  int exec_fact_calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return exec_fact_calls_;
  }
  // Called (without the fake's lock) at the start of every CredsOf, on the loop's thread:
  // lets a test hold the loop in the middle of a batch.
  void set_on_creds(std::function<void(int fd)> hook) { on_creds_ = std::move(hook); }

  int ReadEvents(absl::Span<FanEvent> out, int timeout_ms) override;
  int Respond(const FanEvent& event, bool allow) override;
  void ReleaseAll(absl::Span<const FanEvent> events) override;
  int CredsOf(const FanEvent& event, Creds& out) override;
  int PathOf(const FanEvent& event, char* buffer, size_t capacity, size_t& len) override;
  int FactsOf(const FanEvent& event, FileFacts& out) override;
  int ContentOf(const FanEvent& event, size_t limit, std::string& out) override;
  int IsRootControlled(const FanEvent& event, absl::string_view path, const FileFacts& facts,
                       bool& out) override;
  int ElfInterpreterOf(const FanEvent& event, char* buffer, size_t capacity,
                       size_t& len) override;
  int HostIdentityOf(const char* path, uint64_t& dev, uint64_t& ino) override;
  int IsLoadingElfInterpreter(const FanEvent& event, bool& out) override;
  IdentityMethod identity_method() const override { return method_; }
  absl::Status MarkFilesystem(const std::string& path) override;
  absl::Status UnmarkFilesystem(const std::string& path) override;
  void NoteSubject(const FanEvent& event, uint32_t uid) override {
    std::lock_guard<std::mutex> lock(mu_);
    noted_[event.fd] = uid;
  }

 private:
  mutable std::mutex mu_;
  int next_fd_ ABSL_GUARDED_BY(mu_) = 100;
  struct Queued {
    int fd;
    uint64_t mask;
    int open_error = 0;
    pid_t pid = 0;  // for an unopenable event (no fd to find its FakeEvent by)
  };
  std::deque<Queued> queue_ ABSL_GUARDED_BY(mu_);
  std::map<int, FakeEvent> events_ ABSL_GUARDED_BY(mu_);
  std::map<pid_t, FakeEvent> unopenable_ ABSL_GUARDED_BY(mu_);  // by pid
  std::vector<Answer> answers_ ABSL_GUARDED_BY(mu_);
  std::map<int, uint32_t> noted_ ABSL_GUARDED_BY(mu_);
  std::map<int, int> released_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> marks_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> mark_failures_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::pair<uint64_t, uint64_t>> identities_ ABSL_GUARDED_BY(mu_);
  int exec_fact_calls_ ABSL_GUARDED_BY(mu_) = 0;
  IdentityMethod method_ = IdentityMethod::kPidfdCache;
  std::function<void(int fd)> on_creds_;
};

}  // namespace leash::fswatch::testing
