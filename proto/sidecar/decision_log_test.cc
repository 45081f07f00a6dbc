// AsyncDecisionLog: every record is written once as a whole line or counted as lost, a full
// queue never blocks the caller, the loss is reported as a critical record, and a descriptor
// that blocks or breaks never reaches the caller; the live feed to leashd carries the same
// lines and, when full, loses them counted without holding anything up.
#include "proto/sidecar/decision_log.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "engine/decision_line_read.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::sidecar {
namespace {

using ::testing::HasSubstr;

leash::v1::DecisionRecord MakeRecord(int n) {
  leash::v1::DecisionRecord record;
  record.set_ref(absl::StrCat("r", n));
  record.set_uid(1000 + n % 7);
  record.set_surface("filesystem");
  record.set_action("block");
  record.set_reason("filesystem: /x not in allow list (whitelist)");
  record.mutable_subject()->set_path(absl::StrCat("/x/", n));
  return record;
}

std::string ReadAll(int fd) {
  std::string out;
  char buffer[65536];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      out.append(buffer, n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  return out;
}

// A log file in the test's own temporary folder.
std::string TestFile(const std::string& name) {
  return absl::StrCat(getenv("TEST_TMPDIR"), "/", name);
}

// Opened as leashd opens the decision log for a sidecar.
int OpenForAppend(const std::string& path) {
  return open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
}

// The whole file; a file that cannot be opened fails the test and reads as empty.
std::string ReadLogFile(const std::string& path) {
  const int in = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_GE(in, 0) << path;
  if (in < 0) return "";
  std::string text = ReadAll(in);
  close(in);
  return text;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  return lines;
}

// Fills a pipe so the next blocking write to it waits until someone reads.
void FillPipe(int write_fd) {
  const int flags = fcntl(write_fd, F_GETFL);
  ASSERT_EQ(fcntl(write_fd, F_SETFL, flags | O_NONBLOCK), 0);
  const std::string chunk(4096, 'x');
  while (write(write_fd, chunk.data(), chunk.size()) > 0) {
  }
  ASSERT_EQ(errno, EAGAIN);
  ASSERT_EQ(fcntl(write_fd, F_SETFL, flags), 0);
}

TEST(AsyncDecisionLog, WritesEveryRecordAsOneJsonLine) {
  const std::string path = TestFile("lines.jsonl");
  const int fd = OpenForAppend(path);
  ASSERT_GE(fd, 0);
  {
    AsyncDecisionLog log(fd, 64);
    for (int i = 0; i < 1000; ++i) log.Record(MakeRecord(i));
    log.Flush();
  }
  const std::vector<std::string> lines = Lines(ReadLogFile(path));
  // 64 cells and 1000 records from one fast producer: some may be lost, and then exactly one
  // or more critical lines say how many; written + lost == sent.
  uint64_t written = 0, lost_reported = 0;
  for (const std::string& line : lines) {
    ASSERT_EQ(line.front(), '{') << line;
    ASSERT_EQ(line.back(), '}') << line;
    if (line.find("\"severity\":\"critical\"") != std::string::npos) {
      const size_t at = line.find("decision log: ");
      ASSERT_NE(at, std::string::npos) << line;
      uint64_t n = 0;
      ASSERT_TRUE(absl::SimpleAtoi(
          absl::string_view(line).substr(at + 14, line.find(' ', at + 14) - at - 14), &n))
          << line;
      lost_reported += n;
    } else {
      ++written;
    }
  }
  EXPECT_EQ(written + lost_reported, 1000u);
}

TEST(AsyncDecisionLog, FullQueueDropsWithoutBlockingAndReportsTheLossAsCritical) {
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  FillPipe(pipe_fds[1]);
  constexpr int kCapacity = 16;
  constexpr int kSent = 500;
  auto log = std::make_unique<AsyncDecisionLog>(pipe_fds[1], kCapacity);
  // The writer is now stuck on a full pipe. Every Record() still returns (a blocked one would
  // hang this test until its timeout).
  for (int i = 0; i < kSent; ++i) log->Record(MakeRecord(i));
  const uint64_t lost = log->lost();
  // At most the ring plus what the writer took into its batch before blocking got through.
  EXPECT_GE(lost, static_cast<uint64_t>(kSent - kCapacity - 64));
  EXPECT_GT(lost, 0u);

  // Drain the pipe; the writer wakes, writes what it holds and then the loss record.
  std::string drained;
  std::thread reader([&] { drained = ReadAll(pipe_fds[0]); });
  log->Flush();
  log.reset();  // closes the write end, ending the reader
  reader.join();
  close(pipe_fds[0]);

  // The writer may report the loss in more than one critical record (it reports what was lost
  // each time it drains, and records may still be lost after a report): together they count
  // every lost record, and the last one gives the total since start.
  int normal = 0;
  uint64_t reported = 0;
  std::string critical;
  for (const std::string& line : Lines(drained)) {
    if (line.find_first_not_of('x') == std::string::npos) continue;  // the filler
    const size_t brace = line.find('{');
    ASSERT_NE(brace, std::string::npos) << line;
    const std::string json = line.substr(brace);
    if (json.find("\"severity\":\"critical\"") != std::string::npos) {
      critical = json;
      uint64_t count = 0;
      const size_t at = json.find("decision log: ");
      ASSERT_NE(at, std::string::npos) << json;
      const std::string rest = json.substr(at + 14);
      ASSERT_TRUE(absl::SimpleAtoi(rest.substr(0, rest.find(' ')), &count)) << json;
      reported += count;
    } else {
      ++normal;
    }
  }
  EXPECT_EQ(static_cast<uint64_t>(normal) + lost, static_cast<uint64_t>(kSent));
  EXPECT_EQ(reported, lost) << critical;
  EXPECT_THAT(critical, HasSubstr(absl::StrCat("(", lost, " since start)")));
  EXPECT_THAT(critical, HasSubstr("every decision was still answered"));
  // About the log, not an account: never uid 0, which reads as root's.
  EXPECT_THAT(critical, HasSubstr("\"uid\":4294967295"));
  EXPECT_THAT(critical, HasSubstr("\"account\":\"uid:4294967295\""));
}

// A lost line names the surface whose records were lost and says how many of which action:
// one line per surface, from Record() (the record's surface and action) and RecordLine() (the
// caller's), counted while the writer is stuck on a full pipe.
TEST(AsyncDecisionLog, ALostLineSaysItsSurfaceAndWhatWasLost) {
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  FillPipe(pipe_fds[1]);
  constexpr int kCapacity = 16;
  constexpr int kSent = 500;
  auto log = std::make_unique<AsyncDecisionLog>(pipe_fds[1], kCapacity, DecisionLineGate::Limits(),
                                                leash::v1::SURFACE_FILESYSTEM);
  for (int i = 0; i < kSent; ++i) {
    leash::v1::DecisionRecord record = MakeRecord(i);
    record.set_surface("network");
    record.set_action("allow");
    log->Record(record);
  }
  // The writer is stuck on the full pipe after taking at most the ring and one batch: most of
  // these are lost.
  for (int i = 0; i < kSent; ++i) {
    log->RecordLine(leash::v1::SURFACE_COMMANDS, engine::Verdict::kBlock,
                    [](std::string& line) { line += "{}\n"; });
  }
  std::string drained;
  std::thread reader([&] { drained = ReadAll(pipe_fds[0]); });
  log->Flush();
  log.reset();
  reader.join();
  close(pipe_fds[0]);
  uint64_t network_lost = 0, commands_lost = 0, commands_written = 0;
  for (const std::string& line : Lines(drained)) {
    const size_t brace = line.find('{');
    if (brace == std::string::npos) continue;
    if (line.substr(brace) == "{}") {
      ++commands_written;
      continue;
    }
    absl::StatusOr<leash::v1::DecisionRecord> record =
        engine::ReadDecisionLine(absl::string_view(line).substr(brace));
    if (!record.ok() || record->action() != "lost") continue;
    EXPECT_EQ(record->severity(), "critical");
    EXPECT_TRUE(record->has_uid());
    EXPECT_EQ(record->account(), "uid:4294967295");
    uint64_t count = 0;
    const std::string prefix = absl::StrCat("decision log: ");
    ASSERT_TRUE(absl::StartsWith(record->reason(), prefix)) << line;
    const std::string rest = record->reason().substr(prefix.size());
    ASSERT_TRUE(absl::SimpleAtoi(rest.substr(0, rest.find(' ')), &count)) << line;
    if (record->surface() == "network") {
      network_lost += count;
      EXPECT_THAT(record->reason(), HasSubstr(absl::StrCat(count, " network records lost")));
      EXPECT_THAT(record->reason(), HasSubstr(absl::StrCat(": ", count, " allow (")));
    } else {
      EXPECT_EQ(record->surface(), "commands") << line;
      commands_lost += count;
      EXPECT_THAT(record->reason(), HasSubstr(absl::StrCat(": ", count, " block (")));
    }
  }
  EXPECT_EQ(commands_lost + commands_written, static_cast<uint64_t>(kSent));
  EXPECT_GT(commands_lost, 0u);
  EXPECT_GT(network_lost, 0u);
}

// RecordLine renders straight into ring cells that held earlier lines (16 cells, 200
// records: each cell reused a dozen times), long lines and short ones in turn. Nothing of an
// earlier line may survive into the next: every line is exactly the record rendered.
TEST(AsyncDecisionLog, RecordLineWritesIntoAnEmptiedSlotAndNothingCarriesOver) {
  const std::string path = TestFile("in_place.jsonl");
  const int fd = OpenForAppend(path);
  ASSERT_GE(fd, 0);
  std::vector<leash::v1::DecisionRecord> sent;
  {
    AsyncDecisionLog log(fd, 16);
    for (int i = 0; i < 200; ++i) {
      leash::v1::DecisionRecord record = MakeRecord(i);
      if (i % 2 == 1) {
        // Odd records are longer and carry fields the even ones lack.
        record.mutable_subject()->clear_path();
        record.mutable_subject()->set_binary(absl::StrCat("/bin/", std::string(i, 'b')));
        record.set_severity("critical");
      }
      log.RecordLine([&record](std::string& line) { engine::AppendDecisionLine(record, line); });
      sent.push_back(std::move(record));
      if (i % 8 == 7) log.Flush();  // the 16 slots never fill: nothing is lost
    }
    log.Flush();
    EXPECT_EQ(log.lost(), 0u);
  }
  const std::vector<std::string> lines = Lines(ReadLogFile(path));
  ASSERT_EQ(lines.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) {
    EXPECT_EQ(lines[i] + "\n", engine::DecisionLine(sent[i])) << "record " << i;
  }
}

// A renderer that forgets the newline still gets one line per record, not two run together.
TEST(AsyncDecisionLog, RecordLineEndsEveryLineWithANewline) {
  const std::string path = TestFile("newline.jsonl");
  const int fd = OpenForAppend(path);
  ASSERT_GE(fd, 0);
  {
    AsyncDecisionLog log(fd, 16);
    log.RecordLine([](std::string& line) { line += "{\"ref\":\"a\"}"; });
    log.RecordLine([](std::string& line) { line += "{\"ref\":\"b\"}\n"; });
    log.Flush();
  }
  EXPECT_EQ(ReadLogFile(path), "{\"ref\":\"a\"}\n{\"ref\":\"b\"}\n");
}

// A full queue drops a RecordLine record without calling its renderer, and counts it.
TEST(AsyncDecisionLog, RecordLineOnAFullQueueDropsWithoutRendering) {
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  FillPipe(pipe_fds[1]);
  constexpr int kSent = 300;
  auto log = std::make_unique<AsyncDecisionLog>(pipe_fds[1], 8);
  int rendered = 0;
  for (int i = 0; i < kSent; ++i) {
    log->RecordLine([&](std::string& line) {
      ++rendered;
      engine::AppendDecisionLine(MakeRecord(i), line);
    });
  }
  EXPECT_GT(log->lost(), 0u);
  EXPECT_EQ(static_cast<uint64_t>(rendered) + log->lost(), static_cast<uint64_t>(kSent));
  std::thread reader([&] { ReadAll(pipe_fds[0]); });
  log.reset();
  reader.join();
  close(pipe_fds[0]);
}

TEST(AsyncDecisionLog, ManyProducersEachRecordWrittenExactlyOnce) {
  const std::string path = TestFile("many.jsonl");
  const int fd = OpenForAppend(path);
  ASSERT_GE(fd, 0);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 5000;
  {
    // Room for everything, so nothing may be lost and nothing may be duplicated.
    AsyncDecisionLog log(fd, kThreads * kPerThread);
    std::vector<std::thread> producers;
    for (int t = 0; t < kThreads; ++t) {
      producers.emplace_back([&log, t] {
        for (int i = 0; i < kPerThread; ++i) log.Record(MakeRecord(t * kPerThread + i));
      });
    }
    for (std::thread& p : producers) p.join();
    log.Flush();
    EXPECT_EQ(log.lost(), 0u);
  }
  const std::vector<std::string> lines = Lines(ReadLogFile(path));
  std::set<std::string> refs;
  for (const std::string& line : lines) {
    const size_t at = line.find("\"ref\":\"");
    ASSERT_NE(at, std::string::npos) << line;
    refs.insert(line.substr(at + 7, line.find('"', at + 7) - at - 7));
  }
  EXPECT_EQ(lines.size(), static_cast<size_t>(kThreads * kPerThread));
  EXPECT_EQ(refs.size(), static_cast<size_t>(kThreads * kPerThread));
}

TEST(AsyncDecisionLog, EveryLineIsExactlyWhatEngineDecisionLineWrites) {
  // The writer renders plain records itself (fast) and the rest with engine::DecisionLine;
  // either way the line must be DecisionLine's, byte for byte.
  const std::string path = TestFile("exact.jsonl");
  const int fd = OpenForAppend(path);
  ASSERT_GE(fd, 0);
  const std::vector<std::string> strings = {
      "", "plain /path/x", "quote \" in", "back\\slash", "tab\tnew\nline", "<tag>&amp;",
      "a=b", "caf\xc3\xa9", "it's 'quoted'", std::string("nul\0byte", 8), "\x7f del",
      "u2028\xe2\x80\xa8"};
  std::vector<leash::v1::DecisionRecord> records;
  uint64_t seed = 12345;
  auto next = [&] {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<size_t>(seed >> 33);
  };
  for (int i = 0; i < 600; ++i) {
    leash::v1::DecisionRecord r;
    r.set_ts(i % 3 ? "2026-11-29T21:33:20.000000Z" : strings[next() % strings.size()]);
    r.set_ref(absl::StrCat("ref", i));
    r.set_uid(static_cast<uint32_t>(next() % 3 == 0 ? 0 : next()));
    r.set_surface(next() % 2 ? "filesystem" : "");
    r.set_action(next() % 2 ? "block" : "allow");
    r.set_reason(strings[next() % strings.size()]);
    if (next() % 4 != 0) {
      leash::v1::Subject* s = r.mutable_subject();
      if (next() % 2) s->set_path(strings[next() % strings.size()]);
      if (next() % 3 == 0) s->set_binary(strings[next() % strings.size()]);
      if (next() % 5 == 0) s->set_port(static_cast<uint32_t>(next() % 65536));
      if (next() % 5 == 0) s->set_domain(strings[next() % strings.size()]);
    }
    if (next() % 7 == 0) r.set_severity("critical");
    if (next() % 11 == 0) r.add_findings()->set_category("secrets");
    records.push_back(r);
  }
  {
    AsyncDecisionLog log(fd, 1024);
    for (const auto& r : records) log.Record(r);
    log.Flush();
    ASSERT_EQ(log.lost(), 0u);
  }
  const std::string written = ReadLogFile(path);
  std::string expected;
  for (leash::v1::DecisionRecord r : records) {
    // The writer names each uid's account (none was set here: "root" or "uid:<n>").
    r.set_account(engine::AccountLabel(r.uid(), ""));
    expected += engine::DecisionLine(r);
  }
  EXPECT_EQ(written, expected);
}

TEST(AsyncDecisionLog, ABrokenPipeNeitherKillsTheProcessNorReachesTheCaller) {
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  close(pipe_fds[0]);  // nobody will ever read: writes get EPIPE (and SIGPIPE, blocked)
  {
    AsyncDecisionLog log(pipe_fds[1], 32);
    for (int i = 0; i < 100; ++i) log.Record(MakeRecord(i));
    log.Flush();
  }
  // Still alive, and SIGPIPE is not left pending for another thread to die of.
  sigset_t pending;
  sigpending(&pending);
  EXPECT_FALSE(sigismember(&pending, SIGPIPE));
}

TEST(AsyncDecisionLog, DestructionIsBoundedWhenTheWriterIsStuck) {
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  FillPipe(pipe_fds[1]);
  const absl::Time start = absl::Now();
  {
    AsyncDecisionLog log(pipe_fds[1], 8);
    EXPECT_EQ(log.shutdown_wait(), std::chrono::seconds(2)) << "the default bound";
    // The bound itself is what is tested, not its length: a short one keeps the test quick.
    log.set_shutdown_wait(std::chrono::milliseconds(50));
    log.Record(MakeRecord(1));
    // The writer is blocked in write(2) on the full pipe; the destructor gives up after its
    // bounded wait instead of hanging the caller's shutdown.
  }
  // Generous against a loaded machine; an unbounded wait never gets here (the test times out).
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
  // pipe_fds[0] stays open on purpose: the detached writer still holds the write end.
}

}  // namespace
}  // namespace leash::sidecar

namespace leash::sidecar {
namespace {

// Every datagram waiting on `fd`, joined.
std::string DrainFeed(int fd) {
  std::string out;
  char buffer[256 * 1024];
  for (;;) {
    const ssize_t n = recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n <= 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  return out;
}

// The feed carries exactly the lines the log holds, in whole lines.
TEST(DecisionFeedTest, SendsWhatTheLogWrites) {
  const std::string path = TestFile("feed_same.jsonl");
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair), 0);
  {
    AsyncDecisionLog log(OpenForAppend(path));
    log.AttachFeed(pair[1]);
    for (int i = 0; i < 50; ++i) log.Record(MakeRecord(i));
    log.Flush();
    EXPECT_EQ(log.feed_dropped(), 0u);
  }
  const std::string fed = DrainFeed(pair[0]);
  const int file = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  const std::string written = ReadAll(file);
  close(file);
  EXPECT_EQ(fed, written);
  EXPECT_THAT(fed, HasSubstr("\"ref\":\"r49\""));
  close(pair[0]);
}

// leashd reads each datagram into a buffer of kMaxFeedDatagram bytes, and a longer one would
// reach it cut short, its lines lost from the stream uncounted. A tool call's inputs (the
// agent's own) make a line as long as it likes: no datagram is longer than the buffer, and a
// line that is not sent is counted.
TEST(DecisionFeedTest, NoDatagramIsLongerThanLeashdReads) {
  const std::string path = TestFile("feed_long.jsonl");
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair), 0);
  const int big = 8 << 20;
  setsockopt(pair[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
  {
    AsyncDecisionLog log(OpenForAppend(path));
    log.AttachFeed(pair[1]);
    for (int i = 0; i < 3; ++i) log.Record(MakeRecord(i));
    leash::v1::DecisionRecord huge = MakeRecord(3);
    huge.set_reason(std::string(kMaxFeedDatagram + 1000, 'a'));
    log.Record(huge);
    for (int i = 4; i < 100; ++i) log.Record(MakeRecord(i));
    log.Flush();
    EXPECT_EQ(log.feed_dropped(), 1u);
  }
  std::string fed;
  std::string buffer(16 << 20, '\0');
  for (;;) {
    const ssize_t n = recv(pair[0], buffer.data(), buffer.size(), MSG_DONTWAIT | MSG_TRUNC);
    if (n <= 0) break;
    EXPECT_LE(static_cast<size_t>(n), kMaxFeedDatagram);
    EXPECT_EQ(buffer[static_cast<size_t>(n) - 1], '\n');  // whole lines only
    fed.append(buffer.data(), static_cast<size_t>(n));
  }
  const std::string written = ReadLogFile(path);
  EXPECT_TRUE(absl::StrContains(written, "\"ref\":\"r3\""));
  // (Not printed on failure: the line is longer than a test log wants.)
  EXPECT_FALSE(absl::StrContains(fed, "\"ref\":\"r3\""));
  EXPECT_TRUE(absl::StrContains(fed, "\"ref\":\"r99\""));
  close(pair[0]);
}

// Nobody reads the feed: the enforcer is not held up, every line still reaches the log, and
// the lines the feed lost are counted and said in a critical line.
TEST(DecisionFeedTest, FullFeedDropsAndCountsWithoutBlocking) {
  const std::string path = TestFile("feed_full.jsonl");
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair), 0);
  const int small = 4096;
  setsockopt(pair[0], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  uint64_t dropped = 0;
  constexpr int kRecords = 20000;
  {
    AsyncDecisionLog log(OpenForAppend(path), 1 << 15);
    log.AttachFeed(pair[1]);
    for (int i = 0; i < kRecords; ++i) {
      log.Record(MakeRecord(i));
      if (i % 500 == 0) log.Flush();  // many batches, so the feed's queue fills
    }
    log.Flush();
    dropped = log.feed_dropped();
    EXPECT_EQ(log.lost(), 0u);
  }
  EXPECT_GT(dropped, 0u);
  const int file = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  const std::string written = ReadAll(file);
  close(file);
  int records = 0;
  for (absl::string_view line : absl::StrSplit(written, '\n', absl::SkipEmpty())) {
    if (absl::StrContains(line, "\"surface\":\"filesystem\"")) ++records;
  }
  EXPECT_EQ(records, kRecords);
  EXPECT_THAT(written, HasSubstr("decision stream: "));
  EXPECT_THAT(written, HasSubstr("lines not sent to leashd"));
  close(pair[0]);
}

}  // namespace
}  // namespace leash::sidecar
