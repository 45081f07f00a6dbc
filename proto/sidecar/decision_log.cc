// AsyncDecisionLog: a bounded lock-free ring (Dmitry Vyukov's bounded MPMC queue, used here
// with many producers and one consumer) between the deciding threads and one writer thread.
//
// What the callers get, and why it is built this way:
// - Record() never waits: it claims a cell with one compare-and-swap, renders the record's
//   line into the cell on the caller's thread (the cell's string keeps its capacity; with
//   RecordLine() the caller renders straight into it, so the fanotify loop builds no record
//   and allocates nothing per record), and publishes it; a full ring is a counted drop, not a wait
//   ("writing never blocks a decision"). One contiguous line crosses to the writer's core,
//   not a record's scattered strings.
//   While records keep coming the writer polls the ring every 10 ms, so a producer makes no
//   syscall at all; only a writer idle for a while goes to sleep and asks to be woken, and
//   the wake is a non-blocking futex syscall. Nothing the producer does can wait on the
//   writer, on the descriptor or on a lock. (10 ms rather than 1: on a 2-core host the
//   writer's wake-ups and small writes measurably cut the watcher's opens per second; the
//   ring holds 8,192 records, 10 ms of 800,000 a second.)
// - The writer copies the lines into batches and writes whole lines only (several lines per
//   write(2), never a line split across two), so concurrent writers sharing the descriptor
//   (O_APPEND) interleave by line. On a pipe a batch stays within PIPE_BUF for the same reason.
// - Lost records are reported by the writer itself, as a critical record, as soon as it has
//   drained what was queued: "the count of lost records is itself written as a critical record
//   once there is room".
// - Which lines are written at all (the subject's logging.level, the per-subject limit on allow
//   lines) is decided before a cell is claimed, so held-back lines cost no queue space; the
//   writer reports each subject's held-back count at most once a second.
// - The live stream to leashd rides on the writer too: each batch written to the log is then
//   offered to leashd's datagram socket with MSG_DONTWAIT, so a leashd that does not read
//   costs the enforcer nothing but counted, reported lines; the log stays the durable record.
// - SIGPIPE is blocked on the writer thread only, so a reader that went away turns into EPIPE
//   (counted) instead of killing the process that holds the fanotify group.
#include "proto/sidecar/decision_log.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"

namespace leash::sidecar {
namespace {

// One cell of the ring. `sequence` says whose turn the cell is: equal to the position a
// producer may fill, or position + 1 once filled for the consumer. `line` is the record as
// rendered by its producer.
struct Cell {
  std::atomic<uint64_t> sequence{0};
  std::string line;
};

size_t RoundUpToPowerOfTwo(size_t n) {
  size_t p = 2;
  while (p < n && p < (size_t{1} << 30)) p <<= 1;
  return p;
}

long Futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

uint64_t RandomBits() {
  uint64_t bits = 0;
  // getrandom(2) rather than a device file: the writer of a fanotify sidecar must not open
  // files. A short read leaves the time mixed in below, which is enough for a ref.
  if (getrandom(&bits, sizeof(bits), GRND_NONBLOCK) != sizeof(bits)) bits = 0;
  return bits ^ static_cast<uint64_t>(absl::GetCurrentTimeNanos());
}

}  // namespace

// Surfaces by engine::Surface number (0: unspecified), and the kinds of a lost record.
constexpr int kSurfaces = 5;
constexpr int kLostKinds = 3;

class AsyncDecisionLog::Impl {
 public:
  Impl(int fd, size_t capacity, DecisionLineGate::Limits limits, engine::Surface surface)
      : fd_(fd), surface_(surface), gate_(limits), mask_(RoundUpToPowerOfTwo(capacity) - 1), cells_(mask_ + 1) {
    for (size_t i = 0; i <= mask_; ++i) cells_[i].sequence.store(i, std::memory_order_relaxed);
    struct stat st;
    // Lines written in one write(2) to a pipe are only kept whole up to PIPE_BUF.
    batch_limit_ = (fstat(fd_, &st) == 0 && S_ISFIFO(st.st_mode)) ? PIPE_BUF : 64 * 1024;
    writer_ = std::thread([this] { WriterLoop(); });
  }

  // Asks the writer to write what is queued and stop. Returns false when it has not finished
  // within `timeout` (its descriptor blocks: a pipe nobody reads); the thread is then detached
  // and this Impl must be leaked, since the thread still uses it.
  bool Stop(std::chrono::milliseconds timeout) {
    stop_.store(true, std::memory_order_seq_cst);
    Wake();
    std::unique_lock<std::mutex> lock(flush_mu_);
    if (!flush_cv_.wait_for(lock, timeout, [&] { return writer_done_; })) {
      lock.unlock();
      writer_.detach();
      return false;
    }
    lock.unlock();
    writer_.join();
    if (fd_ >= 0) close(fd_);
    CloseFeed();
    return true;
  }

  DecisionLineGate& gate() { return gate_; }

  void Record(leash::v1::DecisionRecord& record) {
    const LineKind kind = record.severity() == "critical" ? LineKind::kCritical
                          : record.action() == "allow"    ? LineKind::kAllow
                          : record.action() == "block"    ? LineKind::kBlock
                                                          : LineKind::kCritical;
    if (!gate_.Admit(record.uid(), kind, absl::GetCurrentTimeNanos())) return;
    uint64_t pos;
    Cell* cell = Claim(pos);
    if (cell == nullptr) {
      CountLost(SurfaceIndex(record.surface()), record.action() == "allow"   ? kLostAllow
                                                : record.action() == "block" ? kLostBlock
                                                                             : kLostOther);
      return;
    }
    if (record.account().empty()) record.set_account(AccountOf(record.uid()));
    engine::AppendDecisionLine(record, cell->line);
    Publish(*cell, pos);
  }

  void RecordLine(engine::Surface surface, engine::Verdict verdict,
                  absl::FunctionRef<void(std::string&)> append_line) {
    uint64_t pos;
    Cell* cell = Claim(pos);
    if (cell == nullptr) {
      const int index = static_cast<int>(surface);
      CountLost(index > 0 && index < kSurfaces ? index : static_cast<int>(surface_),
                verdict == engine::Verdict::kAllow ? kLostAllow : kLostBlock);
      return;
    }
    append_line(cell->line);  // emptied by the writer; keeps its capacity
    // The writer joins lines as they are: one without its newline would run into the next.
    if (!cell->line.empty() && cell->line.back() != '\n') cell->line.push_back('\n');
    Publish(*cell, pos);
  }

  uint64_t lost() const { return lost_.load(std::memory_order_relaxed); }

  // The account a line names for `uid` (engine::AccountLabel over the names set).
  std::string AccountOf(uint32_t uid) const {
    std::shared_ptr<const AccountMap> names;
    {
      absl::ReaderMutexLock lock(&accounts_mu_);
      names = accounts_;
    }
    if (names != nullptr) {
      if (auto it = names->find(uid); it != names->end()) return it->second;
    }
    return engine::AccountLabel(uid, "");
  }

  void SetAccounts(absl::Span<const std::pair<uint32_t, std::string>> accounts) {
    absl::MutexLock lock(&accounts_mu_);
    auto next = accounts_ != nullptr ? std::make_shared<AccountMap>(*accounts_)
                                     : std::make_shared<AccountMap>();
    for (const auto& [uid, name] : accounts) {
      if (!name.empty()) (*next)[uid] = name;
    }
    accounts_ = std::move(next);
  }

  void Flush() {
    const uint64_t target = queued_.load(std::memory_order_acquire);
    std::unique_lock<std::mutex> lock(flush_mu_);
    flush_requested_.store(true, std::memory_order_seq_cst);
    Wake();
    flush_cv_.wait(lock, [&] { return handled_ >= target || writer_done_; });
  }

 private:
  // Claims the next cell for a producer, or counts a lost record and returns null when the
  // ring is full. Never waits.
  Cell* Claim(uint64_t& pos) {
    pos = enqueue_pos_.load(std::memory_order_relaxed);
    for (;;) {
      Cell* cell = &cells_[pos & mask_];
      const uint64_t seq = cell->sequence.load(std::memory_order_acquire);
      const int64_t diff = static_cast<int64_t>(seq) - static_cast<int64_t>(pos);
      if (diff == 0) {
        if (enqueue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          return cell;
        }
      } else if (diff < 0) {
        // Full: the cell still holds a record from one lap ago. The caller counts it
        // (CountLost), by what it was about.
        return nullptr;
      } else {
        pos = enqueue_pos_.load(std::memory_order_relaxed);
      }
    }
  }

  // Hands a filled cell to the writer (which emptied its line when it took the last one out).
  void Publish(Cell& cell, uint64_t pos) {
    cell.sequence.store(pos + 1, std::memory_order_release);
    queued_.fetch_add(1, std::memory_order_release);
    // Pairs with the writer's store of writer_sleeping_ then load of the cell: either it sees
    // this record, or we see it asleep and wake it.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (writer_sleeping_.load(std::memory_order_relaxed)) Wake();
  }

  // Non-blocking.
  void Wake() {
    wake_seq_.fetch_add(1, std::memory_order_seq_cst);
    Futex(&wake_seq_, FUTEX_WAKE_PRIVATE, 1, nullptr);
  }

  // Takes the next line for the single consumer, appending it to `batch`; false when the next
  // cell is not published yet.
  bool TakeInto(std::string& batch) {
    Cell& cell = cells_[dequeue_pos_ & mask_];
    const uint64_t seq = cell.sequence.load(std::memory_order_acquire);
    if (static_cast<int64_t>(seq) - static_cast<int64_t>(dequeue_pos_ + 1) < 0) return false;
    batch += cell.line;
    cell.line.clear();  // keeps its capacity for the next producer
    cell.sequence.store(dequeue_pos_ + mask_ + 1, std::memory_order_release);
    ++dequeue_pos_;
    return true;
  }

  // Writes `buffer` whole (retrying short writes and EINTR; waiting for a non-blocking
  // descriptor). Returns false when the descriptor fails for good.
  bool WriteAll(absl::string_view buffer) {
    size_t done = 0;
    while (done < buffer.size()) {
      const ssize_t n = write(fd_, buffer.data() + done, buffer.size() - done);
      if (n > 0) {
        done += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        pollfd p{fd_, POLLOUT, 0};
        poll(&p, 1, 100);
        if (stop_.load(std::memory_order_relaxed) && !(p.revents & POLLOUT)) return false;
        continue;
      }
      const int error = n < 0 ? errno : EIO;
      if (!write_error_reported_) {
        write_error_reported_ = true;
        // stderr is already open; this opens nothing.
        dprintf(2, "leash decision log: write to fd %d failed (errno %d); records are lost\n",
                fd_, error);
      }
      // A pending SIGPIPE for this thread (blocked here) is consumed so it never reaches
      // another thread later.
      sigset_t pipe_set;
      sigemptyset(&pipe_set);
      sigaddset(&pipe_set, SIGPIPE);
      const timespec zero{0, 0};
      while (sigtimedwait(&pipe_set, nullptr, &zero) == SIGPIPE) {
      }
      return false;
    }
    return true;
  }

  // Writes whole lines to the log, then offers the same lines to the feed without waiting.
  void Emit(absl::string_view chunk, bool& fd_failed) {
    if (!fd_failed && !WriteAll(chunk)) fd_failed = true;
    const int feed = feed_fd_.load(std::memory_order_acquire);
    if (feed < 0 || chunk.empty()) return;
    // Whole lines, at most kMaxFeedDatagram to a datagram.
    while (!chunk.empty()) {
      size_t end = chunk.size();
      if (end > kMaxFeedDatagram) {
        end = chunk.rfind('\n', kMaxFeedDatagram - 1);
        end = end == absl::string_view::npos ? chunk.find('\n') : end;
        end = end == absl::string_view::npos ? chunk.size() : end + 1;
      }
      const absl::string_view datagram = chunk.substr(0, end);
      chunk.remove_prefix(end);
      // A single line over the limit is not sent: the reader would only see its start.
      if (datagram.size() <= kMaxFeedDatagram &&
          send(feed, datagram.data(), datagram.size(), MSG_DONTWAIT | MSG_NOSIGNAL) ==
              static_cast<ssize_t>(datagram.size())) {
        continue;
      }
      // EAGAIN (leashd has not drained the socket's queue), ECONNREFUSED (no leashd end): the
      // stream loses these lines; the log above has them.
      feed_dropped_.fetch_add(
          static_cast<uint64_t>(std::count(datagram.begin(), datagram.end(), '\n')),
          std::memory_order_relaxed);
    }
  }

  void WriterLoop() {
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, nullptr);

    std::string batch;
    uint64_t reported_lost = 0;
    int64_t last_suppressed_report_ns = 0;
    constexpr int64_t kSuppressedReportPeriodNs = 1'000'000'000;
    bool fd_failed = false;
    uint64_t reported_feed_dropped = 0;
    // Empty polls since the last record; after kBusyPolls the writer sleeps until woken.
    int idle_polls = 0;
    constexpr int kBusyPolls = 10;
    for (;;) {
      const uint32_t seen = wake_seq_.load(std::memory_order_seq_cst);
      uint64_t taken = 0;
      for (;;) {
        const size_t before = batch.size();
        if (!TakeInto(batch)) break;
        ++taken;
        if (before > 0 && batch.size() > batch_limit_) {
          // The new line would take the batch past the limit: write the lines before it.
          Emit(absl::string_view(batch).substr(0, before), fd_failed);
          batch.erase(0, before);
        }
      }
      const uint64_t lost_now = lost_.load(std::memory_order_relaxed);
      if (lost_now != reported_lost) {
        // One line per surface that lost records, each saying how many of which action.
        for (int surface = 0; surface < kSurfaces; ++surface) {
          uint64_t counts[kLostKinds];
          uint64_t sum = 0;
          for (int kind = 0; kind < kLostKinds; ++kind) {
            const uint64_t now = lost_by_[surface][kind].load(std::memory_order_relaxed);
            counts[kind] = now - reported_by_[surface][kind];
            reported_by_[surface][kind] = now;
            sum += counts[kind];
          }
          if (sum > 0) {
            engine::AppendDecisionLine(LostRecord(surface, counts, sum, lost_now), batch);
          }
        }
        reported_lost = lost_now;
      }
      if (const int64_t now = absl::GetCurrentTimeNanos();
          now - last_suppressed_report_ns >= kSuppressedReportPeriodNs ||
          stop_.load(std::memory_order_relaxed)) {
        last_suppressed_report_ns = now;
        // At most once a second, like the held-back lines: the report itself can be a drop
        // while leashd is still not reading.
        if (const uint64_t dropped = feed_dropped_.load(std::memory_order_relaxed);
            dropped != reported_feed_dropped) {
          engine::AppendDecisionLine(
              FeedDroppedRecord(dropped - reported_feed_dropped, dropped), batch);
          reported_feed_dropped = dropped;
        }
        gate_.TakeSuppressed([&](const DecisionLineGate::Suppressed& held) {
          engine::AppendDecisionLine(SuppressedRecord(held), batch);
        });
      }
      if (!batch.empty()) {
        Emit(batch, fd_failed);
        batch.clear();
      }
      if (taken > 0 || flush_requested_.load(std::memory_order_seq_cst)) {
        std::lock_guard<std::mutex> lock(flush_mu_);
        handled_ += taken;
        flush_requested_.store(false, std::memory_order_relaxed);
        flush_cv_.notify_all();
      }
      if (taken > 0) {
        idle_polls = 0;
        continue;
      }
      if (stop_.load(std::memory_order_seq_cst)) break;
      if (idle_polls < kBusyPolls) {
        // Records came recently: poll again in 10 ms, asking nobody to wake us.
        ++idle_polls;
        const timespec poll_period{0, 10 * 1000 * 1000};
        Futex(&wake_seq_, FUTEX_WAIT_PRIVATE, seen, &poll_period);
        continue;
      }

      writer_sleeping_.store(true, std::memory_order_seq_cst);
      // Re-check after announcing sleep: a producer that published before the announcement
      // is seen here; one after it sees writer_sleeping_ and wakes us; the futex compares
      // wake_seq_ against `seen` so a wake in between is not lost. The timeout is a backstop.
      if (!HasPublished() && !stop_.load(std::memory_order_seq_cst) &&
          !flush_requested_.load(std::memory_order_seq_cst)) {
        const timespec timeout{0, 200 * 1000 * 1000};
        Futex(&wake_seq_, FUTEX_WAIT_PRIVATE, seen, &timeout);
      }
      writer_sleeping_.store(false, std::memory_order_seq_cst);
    }
    std::lock_guard<std::mutex> lock(flush_mu_);
    writer_done_ = true;
    flush_cv_.notify_all();
  }

  bool HasPublished() const {
    const Cell& cell = cells_[dequeue_pos_ & mask_];
    return cell.sequence.load(std::memory_order_acquire) == dequeue_pos_ + 1;
  }

  // A line about the log itself, on the writer's surface.
  leash::v1::DecisionRecord AboutTheLog(absl::string_view action) {
    leash::v1::DecisionRecord record;
    record.set_ts(FormatNs(absl::GetCurrentTimeNanos()));
    record.set_ref(engine::MakeRef(RandomBits()));
    record.set_uid(engine::kUnknownUid);  // about the log, not any account (0 would read as root)
    record.set_account(engine::AccountLabel(engine::kUnknownUid, ""));
    record.set_surface(std::string(SurfaceLabel(surface_)));
    record.set_action(std::string(action));
    record.set_severity("critical");
    return record;
  }

  leash::v1::DecisionRecord LostRecord(int surface, const uint64_t (&counts)[kLostKinds],
                                       uint64_t since_last, uint64_t total) {
    leash::v1::DecisionRecord lost = AboutTheLog("lost");
    const absl::string_view name = SurfaceLabel(static_cast<engine::Surface>(surface));
    lost.set_surface(std::string(name));
    std::vector<std::string> kinds;
    if (counts[kLostAllow] > 0) kinds.push_back(absl::StrCat(counts[kLostAllow], " allow"));
    if (counts[kLostBlock] > 0) kinds.push_back(absl::StrCat(counts[kLostBlock], " block"));
    if (counts[kLostOther] > 0) {
      kinds.push_back(absl::StrCat(counts[kLostOther], " other (outcome, notes)"));
    }
    lost.set_reason(absl::StrCat("decision log: ", since_last, " ", name,
                                 " records lost because the queue was full: ",
                                 absl::StrJoin(kinds, ", "), " (", total,
                                 " since start); every decision was still answered"));
    return lost;
  }

  leash::v1::DecisionRecord FeedDroppedRecord(uint64_t since_last, uint64_t total) {
    leash::v1::DecisionRecord lost = AboutTheLog("lost");
    lost.set_reason(absl::StrCat("decision stream: ", since_last,
                                 " lines not sent to leashd, which was not reading (", total,
                                 " since start); this log has them"));
    return lost;
  }

 public:
  void AttachFeed(int fd) {
    // A larger send queue rides out a short stall of leashd's reader; refused is fine (the
    // default queue still works, it only drops sooner).
    const int bytes = 1 << 20;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
    const int old = feed_fd_.exchange(fd, std::memory_order_acq_rel);
    if (old >= 0) close(old);
  }
  uint64_t feed_dropped() const { return feed_dropped_.load(std::memory_order_relaxed); }
  void CloseFeed() {
    const int old = feed_fd_.exchange(-1, std::memory_order_acq_rel);
    if (old >= 0) close(old);
  }

 private:
  static std::string FormatNs(int64_t ns) {
    return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::FromUnixNanos(ns), absl::UTCTimeZone());
  }

  leash::v1::DecisionRecord SuppressedRecord(const DecisionLineGate::Suppressed& held) {
    leash::v1::DecisionRecord record;
    record.set_ts(FormatNs(absl::GetCurrentTimeNanos()));
    record.set_ref(engine::MakeRef(RandomBits()));
    record.set_uid(held.uid);
    record.set_account(AccountOf(held.uid));
    record.set_surface(std::string(SurfaceLabel(surface_)));
    record.set_action("suppressed");
    record.set_severity("warning");
    const DecisionLineGate::Limits& limits = gate_.limits();
    record.set_reason(absl::StrCat(
        "decision log: ", held.lines, " allow lines of uid ", held.uid,
        " not written between ", FormatNs(held.first_ns), " and ", FormatNs(held.last_ns),
        " (over ", limits.allow_lines_per_second, " a second after a burst of ",
        limits.allow_burst, "); every block and critical was written"));
    return record;
  }

  // Records dropped on a full queue, by surface (engine::Surface's number) and action, as the
  // producers count them; the writer alone reads them into reported_by_.
  static constexpr int kLostAllow = 0, kLostBlock = 1, kLostOther = 2;
  void CountLost(int surface, int kind) {
    lost_by_[surface][kind].fetch_add(1, std::memory_order_relaxed);
    lost_.fetch_add(1, std::memory_order_relaxed);
  }
  // A record's surface as its number; the writer's own for one it does not name.
  int SurfaceIndex(absl::string_view name) const {
    for (int i = 1; i < kSurfaces; ++i) {
      if (name == engine::SurfaceName(static_cast<engine::Surface>(i))) return i;
    }
    return static_cast<int>(surface_);
  }
  // A surface's name for a line; "unspecified" only for a writer no surface was given.
  static absl::string_view SurfaceLabel(engine::Surface surface) {
    return surface == leash::v1::SURFACE_UNSPECIFIED ? "unspecified"
                                                     : engine::SurfaceName(surface);
  }

  const int fd_;
  const engine::Surface surface_;
  std::atomic<uint64_t> lost_by_[kSurfaces][kLostKinds] = {};
  uint64_t reported_by_[kSurfaces][kLostKinds] = {};  // writer thread only
  using AccountMap = absl::flat_hash_map<uint32_t, std::string>;
  mutable absl::Mutex accounts_mu_;
  std::shared_ptr<const AccountMap> accounts_ ABSL_GUARDED_BY(accounts_mu_);
  DecisionLineGate gate_;
  const size_t mask_;
  std::vector<Cell> cells_;
  size_t batch_limit_ = PIPE_BUF;

  alignas(64) std::atomic<uint64_t> enqueue_pos_{0};
  alignas(64) uint64_t dequeue_pos_ = 0;  // writer thread only
  alignas(64) std::atomic<uint64_t> queued_{0};
  std::atomic<uint64_t> lost_{0};
  std::atomic<int> feed_fd_{-1};
  std::atomic<uint64_t> feed_dropped_{0};
  std::atomic<uint32_t> wake_seq_{0};
  std::atomic<bool> writer_sleeping_{false};
  std::atomic<bool> stop_{false};
  std::atomic<bool> flush_requested_{false};
  bool write_error_reported_ = false;  // writer thread only

  // Flush() only: producers never touch these.
  std::mutex flush_mu_;
  std::condition_variable flush_cv_;
  uint64_t handled_ = 0;
  bool writer_done_ = false;

  std::thread writer_;
};

AsyncDecisionLog::AsyncDecisionLog(int fd, size_t capacity, DecisionLineGate::Limits limits,
                                   engine::Surface surface)
    : impl_(std::make_unique<Impl>(fd, capacity, limits, surface)) {}

AsyncDecisionLog::~AsyncDecisionLog() {
  // A writer stuck on a descriptor nobody drains must not hold up the caller's shutdown: after
  // a bounded wait the writer is left running on its (leaked) state.
  if (!impl_->Stop(shutdown_wait_)) {
    dprintf(2, "leash decision log: writer still blocked on its descriptor at shutdown; "
               "records still queued are lost\n");
    (void)impl_.release();
  }
}

void AsyncDecisionLog::Record(leash::v1::DecisionRecord record) { impl_->Record(record); }

void AsyncDecisionLog::RecordLine(absl::FunctionRef<void(std::string&)> append_line) {
  impl_->RecordLine(leash::v1::SURFACE_UNSPECIFIED, engine::Verdict::kBlock, append_line);
}

void AsyncDecisionLog::RecordLine(engine::Surface surface, engine::Verdict verdict,
                                  absl::FunctionRef<void(std::string&)> append_line) {
  impl_->RecordLine(surface, verdict, append_line);
}

std::string AsyncDecisionLog::AccountOf(uint32_t uid) { return impl_->AccountOf(uid); }

void AsyncDecisionLog::SetAccounts(
    absl::Span<const std::pair<uint32_t, std::string>> accounts) {
  impl_->SetAccounts(accounts);
}

bool AsyncDecisionLog::Admits(uint32_t uid, engine::Verdict verdict, bool critical) {
  return impl_->gate().Admit(uid,
                             critical                              ? LineKind::kCritical
                             : verdict == engine::Verdict::kAllow ? LineKind::kAllow
                                                                   : LineKind::kBlock,
                             absl::GetCurrentTimeNanos());
}

void AsyncDecisionLog::SetLevel(uint32_t uid, LogLevel level) {
  impl_->gate().SetLevel(uid, level);
}

uint64_t AsyncDecisionLog::lost() const { return impl_->lost(); }

void AsyncDecisionLog::AttachFeed(int fd) { impl_->AttachFeed(fd); }

uint64_t AsyncDecisionLog::feed_dropped() const { return impl_->feed_dropped(); }

void AsyncDecisionLog::Flush() { impl_->Flush(); }

}  // namespace leash::sidecar
