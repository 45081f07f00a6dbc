#include "engine/decision_record.h"

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/decision_line_read.h"
#include "google/protobuf/util/json_util.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::engine {
namespace {

using ::testing::HasSubstr;

TEST(MakeRef, IsEightUnambiguousCharacters) {
  const std::string ref = MakeRef(0x123456789abcdefULL);
  EXPECT_EQ(ref.size(), 8u);
  EXPECT_EQ(ref.find_first_of("lo01"), std::string::npos);
  EXPECT_NE(MakeRef(1), MakeRef(2));
}

TEST(DecisionLine, IsOneJsonLineWithTheSpecFields) {
  Decision decision;
  decision.verdict = Verdict::kBlock;
  decision.reason = "network: evil.com:443 not in allow list (whitelist)";
  leash::v1::Subject subject;
  subject.set_domain("evil.com");
  subject.set_ip("192.0.2.9");
  subject.set_port(443);
  const std::string line = DecisionLine(MakeDecisionRecord(
      absl::FromUnixSeconds(1795988000), "abcdefgh", 1001, leash::v1::SURFACE_NETWORK, decision,
      subject));
  EXPECT_EQ(line,
            "{\"ts\":\"2026-11-29T21:33:20.000000Z\",\"ref\":\"abcdefgh\",\"uid\":1001,"
            "\"surface\":\"network\",\"action\":\"block\",\"reason\":\"network: evil.com:443 not "
            "in allow list (whitelist)\",\"subject\":{\"domain\":\"evil.com\",\"ip\":\"192.0.2.9\","
            "\"port\":443}}\n");
}

// Every line names its uid, root's 0 included (proto3 would leave a zero out), with the
// account beside it; an old line without a uid still reads (as 0, what it meant).
TEST(DecisionLine, UidZeroIsWrittenAndTheAccountSitsBesideTheUid) {
  Decision decision;
  decision.verdict = Verdict::kBlock;
  decision.reason = "network: not redirected";
  leash::v1::DecisionRecord record = MakeDecisionRecord(
      absl::FromUnixSeconds(1795988000), "abcdefgh", 0, leash::v1::SURFACE_NETWORK, decision,
      leash::v1::Subject());
  record.set_account(AccountLabel(0, ""));
  EXPECT_EQ(DecisionLine(record),
            "{\"ts\":\"2026-11-29T21:33:20.000000Z\",\"ref\":\"abcdefgh\",\"uid\":0,"
            "\"account\":\"root\",\"surface\":\"network\",\"action\":\"block\",\"reason\":"
            "\"network: not redirected\",\"subject\":{}}\n");
  FileDecisionFields fields;
  fields.ts = "t";
  fields.ref = "r";
  fields.uid = 0;
  fields.account = "root";
  std::string line;
  AppendDecisionLine(fields, [](std::string& out) { out += "why"; }, line);
  EXPECT_THAT(line, HasSubstr("\"uid\":0,\"account\":\"root\","));
  EXPECT_EQ(AccountLabel(1001, "leash-iris"), "leash-iris");
  EXPECT_EQ(AccountLabel(1001, ""), "uid:1001");
  EXPECT_EQ(AccountLabel(kUnknownUid, ""), "uid:4294967295");
}

TEST(DecisionLine, EscapesControlCharactersSoALineStaysOneLine) {
  leash::v1::DecisionRecord record;
  record.set_reason("a\nb");
  record.mutable_subject()->set_path("/tmp/x\ny");
  const std::string line = DecisionLine(record);
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_THAT(line, HasSubstr("a\\nb"));
}

// A file name is any bytes; the printer alone would drop those that are not UTF-8 and log
// "/etc/shadow\xff" as "/etc/shadow". Every string of the record, nested ones too.
TEST(DecisionLine, ShowsTheBytesOfTextThatIsNotUtf8InsteadOfDroppingThem) {
  leash::v1::DecisionRecord record;
  record.set_reason("filesystem: /etc/shadow\xff not in allow list (whitelist)");
  record.mutable_subject()->set_path("/etc/shadow\xff");
  record.add_findings()->set_category("secr\xff" "ets");
  const std::string line = DecisionLine(record);
  EXPECT_THAT(line, HasSubstr("\"path\":\"/etc/shadow\\\\xff\""));
  EXPECT_THAT(line, HasSubstr("\"reason\":\"filesystem: /etc/shadow\\\\xff not in"));
  EXPECT_THAT(line, HasSubstr("secr\\\\xffets"));
  EXPECT_THAT(line, ::testing::Not(HasSubstr("\"path\":\"/etc/shadow\"")));
  // Valid UTF-8 is printed as it is.
  record.mutable_subject()->set_path("/srv/caf\xc3\xa9");
  EXPECT_THAT(DecisionLine(record), HasSubstr("\"path\":\"/srv/caf\xc3\xa9\""));
}

// What protobuf's own JSON printer writes for `record` (the reference every JSON reader of the
// log, protobuf's parser among them, reads). Its order is the field numbers', so a record
// compared with it carries no `account` or `process`, which the log writes beside uid and
// after subject.
std::string PrinterLine(const leash::v1::DecisionRecord& record) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string line;
  EXPECT_TRUE(google::protobuf::util::MessageToJsonString(record, &line, options).ok());
  return line + "\n";
}

// Text each field is tried with: plain, empty, and each kind the JSON printer escapes.
const std::vector<std::string>& TrickyTexts() {
  static const std::vector<std::string> texts = {
      "plain text (with 'quotes') and /slashes/",
      "",
      "a \"quoted\" word",
      "back\\slash",
      "<tag>",
      "a&b",
      "k=v",
      "line\nbreak",
      "tab\there",
      std::string("nul\0byte", 8),
      "del\x7f",
      "caf\xc3\xa9 \xe2\x82\xac",  // UTF-8
      "\xff invalid UTF-8",
  };
  return texts;
}

// What IsJsonPlain calls plain the printer must write as it is (so the fast renderers may
// copy it); asked of the printer itself, for every byte. Plain is all of printable ASCII but
// for the characters the printer escapes or may escape.
TEST(IsJsonPlain, WhatItCallsPlainThePrinterWritesAsItIsForEveryByte) {
  int plain = 0;
  for (int c = 0; c < 256; ++c) {
    const std::string text = absl::StrCat("a", std::string(1, static_cast<char>(c)), "z");
    if (!IsJsonPlain(text)) continue;
    ++plain;
    leash::v1::DecisionRecord record;
    record.set_reason(text);
    EXPECT_EQ(PrinterLine(record), absl::StrCat("{\"reason\":\"", text, "\"}\n"))
        << "byte " << c;
  }
  EXPECT_EQ(plain, 95 - 6);  // 0x20-0x7e less " \\ < > & =
  EXPECT_TRUE(IsJsonPlain(""));
  EXPECT_FALSE(IsJsonPlain("/a/b\n"));
}

// The renderer writes exactly what protobuf's printer writes, for every field in turn holding
// each tricky text (the rest plain), with and without a subject and findings, uid 0 included:
// lines stay what every reader of the log already reads.
TEST(AppendDecisionLine, RecordLineIsWhatProtobufsPrinterWritesByteForByte) {
  auto base = [] {
    leash::v1::DecisionRecord r;
    r.set_ts("2026-11-30T01:02:03.123456Z");
    r.set_ref("k3x9q2mw");
    r.set_uid(1001);
    r.set_surface("filesystem");
    r.set_action("allow");
    r.set_reason("filesystem: /a matches allow entry '/a'");
    r.mutable_subject()->set_path("/a");
    return r;
  };
  using Setter = void (*)(leash::v1::DecisionRecord&, const std::string&);
  const std::vector<Setter> setters = {
      [](leash::v1::DecisionRecord& r, const std::string& t) { r.set_ts(t); },
      [](leash::v1::DecisionRecord& r, const std::string& t) { r.set_ref(t); },
      [](leash::v1::DecisionRecord& r, const std::string& t) { r.set_surface(t); },
      [](leash::v1::DecisionRecord& r, const std::string& t) { r.set_action(t); },
      [](leash::v1::DecisionRecord& r, const std::string& t) { r.set_reason(t); },
      [](leash::v1::DecisionRecord& r, const std::string& t) { r.set_severity(t); },
      [](leash::v1::DecisionRecord& r, const std::string& t) { r.set_outcome(t); },
      [](leash::v1::DecisionRecord& r, const std::string& t) { r.mutable_subject()->set_domain(t); },
      [](leash::v1::DecisionRecord& r, const std::string& t) { r.mutable_subject()->set_ip(t); },
      [](leash::v1::DecisionRecord& r, const std::string& t) { r.mutable_subject()->set_path(t); },
      [](leash::v1::DecisionRecord& r, const std::string& t) { r.mutable_subject()->set_binary(t); },
      [](leash::v1::DecisionRecord& r, const std::string& t) { r.mutable_subject()->set_name(t); },
      [](leash::v1::DecisionRecord& r, const std::string& t) { r.mutable_subject()->set_inputs(t); },
  };
  std::vector<leash::v1::DecisionRecord> records;
  for (const Setter& set : setters) {
    for (const std::string& text : TrickyTexts()) {
      records.push_back(base());
      set(records.back(), text);
    }
  }
  records.push_back(base());
  records.back().set_uid(0);  // present: written as 0, as the printer writes a set oneof
  records.back().mutable_subject()->set_port(443);
  records.push_back(base());
  records.back().clear_subject();
  records.push_back(base());
  records.back().mutable_subject()->Clear();  // present but empty: "subject":{}
  records.push_back(base());
  records.back().add_findings()->set_category("secrets");
  records.push_back(base());  // an outcome record: action, outcome and severity together
  records.back().set_action("outcome");
  records.back().set_outcome("reset");
  records.back().set_severity("critical");
  records.push_back(base());  // a block an audited surface let through
  records.back().set_action("block");
  records.back().set_enforced(false);
  records.push_back(base());  // a tricky text beside it takes the printer's route
  records.back().set_enforced(false);
  records.back().set_reason("quote \" and <tag>");
  records.push_back(base());
  records.back().set_enforced(true);
  records.push_back(leash::v1::DecisionRecord());  // nothing at all: "{}"
  for (size_t i = 0; i < records.size(); ++i) {
    std::string out = "kept|";  // appends, never overwrites
    AppendDecisionLine(records[i], out);
    EXPECT_EQ(out, "kept|" + DecisionLine(records[i])) << "record " << i;
    // The printer drops invalid UTF-8 (the renderer shows it as \xNN: tested above).
    if (out.find("invalid UTF-8") != std::string::npos) continue;
    EXPECT_EQ(out, "kept|" + PrinterLine(records[i])) << "record " << i;
  }
}

// The fanotify loop's renderer: the line of the record its fields and reason make, byte for
// byte, the reason written straight into the line.
TEST(AppendDecisionLine, FileFieldsLineIsTheRecordsDecisionLine) {
  struct Case {
    Surface surface;
    Verdict verdict;
    uint32_t uid;
    std::string path;
    std::string reason;
    bool critical;
    bool enforced = true;
  };
  std::vector<Case> cases = {
      {leash::v1::SURFACE_FILESYSTEM, Verdict::kAllow, 1001, "/w/e500/f",
       "filesystem: /w/e500/f matches allow entry '/w/e500'", false},
      {leash::v1::SURFACE_COMMANDS, Verdict::kBlock, 1001, "/usr/bin/curl",
       "commands: /usr/bin/curl not in allow list (whitelist)", false},
      {leash::v1::SURFACE_FILESYSTEM, Verdict::kBlock, 0, "", "", true},
      {leash::v1::SURFACE_FILESYSTEM, Verdict::kBlock, 7, "", "cannot identify", true},
      {leash::v1::SURFACE_FILESYSTEM, Verdict::kAllow, 7, std::string(4000, 'p'), "long", false},
      {leash::v1::SURFACE_FILESYSTEM, Verdict::kBlock, 1001, "/etc/x",
       "filesystem: /etc/x not in allow list (whitelist)", false, /*enforced=*/false},
      {leash::v1::SURFACE_COMMANDS, Verdict::kBlock, 1001, "/bin/\"q\"", "commands: <odd>", false,
       /*enforced=*/false},
  };
  for (const std::string& text : TrickyTexts()) {
    cases.push_back({leash::v1::SURFACE_FILESYSTEM, Verdict::kBlock, 1001, "/t/" + text,
                     "filesystem: plain", false});
    cases.push_back({leash::v1::SURFACE_COMMANDS, Verdict::kBlock, 1001, "/bin/x",
                     "commands: " + text, true});
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    FileDecisionFields fields;
    fields.ts = "2026-11-30T01:02:03.123456Z";
    fields.ref = "k3x9q2mw";
    fields.uid = c.uid;
    fields.surface = c.surface;
    fields.verdict = c.verdict;
    fields.path = c.path;
    fields.critical = c.critical;
    fields.enforced = c.enforced;
    fields.account = i % 2 == 0 ? "leash-iris" : "";
    const ProcessFields process{4242, 1, "/usr/bin/cat", i % 3 == 0 ? "cat \"x\"\n" : "cat x"};
    if (i % 4 != 1) fields.process = &process;
    std::string out = "kept|";
    AppendDecisionLine(fields, [&](std::string& line) { line += c.reason; }, out);

    leash::v1::DecisionRecord record;
    record.set_ts(std::string(fields.ts));
    record.set_ref(std::string(fields.ref));
    record.set_uid(c.uid);
    record.set_surface(std::string(SurfaceName(c.surface)));
    record.set_action(std::string(VerdictName(c.verdict)));
    record.set_reason(c.reason);
    leash::v1::Subject* subject = record.mutable_subject();
    if (!c.path.empty()) {
      if (c.surface == leash::v1::SURFACE_COMMANDS) {
        subject->set_binary(c.path);
      } else {
        subject->set_path(c.path);
      }
    }
    if (c.critical) record.set_severity("critical");
    if (!c.enforced) record.set_enforced(false);
    record.set_account(std::string(fields.account));
    if (fields.process != nullptr) {
      record.mutable_process()->set_pid(process.pid);
      record.mutable_process()->set_ppid(process.ppid);
      record.mutable_process()->set_exe(std::string(process.exe));
      record.mutable_process()->set_cmdline(std::string(process.cmdline));
    }
    EXPECT_EQ(out, "kept|" + DecisionLine(record)) << "case " << i;
    // The reader gives the process back as it was written.
    absl::StatusOr<leash::v1::DecisionRecord> read =
        ReadDecisionLine(absl::string_view(out).substr(5));
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(read->has_process(), fields.process != nullptr) << "case " << i;
    EXPECT_EQ(read->process().cmdline(), record.process().cmdline()) << "case " << i;
    EXPECT_EQ(read->process().pid(), record.process().pid()) << "case " << i;
  }
}

// Audit: a block let through is a block in the log, marked enforced: false, after every field
// rule L1 names; an enforced decision carries no such field.
TEST(MakeDecisionRecord, ABlockUnderAuditIsLoggedAsABlockNotEnforced) {
  Decision decision;
  decision.verdict = Verdict::kBlock;
  decision.reason = "tools: search not in allow list (whitelist)";
  leash::v1::Subject subject;
  subject.set_name("search");
  const Decision audited = UnderAudit(decision, /*audited=*/true);
  EXPECT_TRUE(audited.permits());
  EXPECT_FALSE(audited.allowed());
  const std::string line = DecisionLine(MakeDecisionRecord(
      absl::FromUnixSeconds(1795988000), "abcdefgh", 1001, leash::v1::SURFACE_TOOLS, audited,
      subject));
  EXPECT_THAT(line, HasSubstr("\"action\":\"block\""));
  EXPECT_THAT(line, HasSubstr("\"subject\":{\"name\":\"search\"},\"enforced\":false}\n"));

  const Decision enforced = UnderAudit(decision, /*audited=*/false);
  EXPECT_FALSE(enforced.permits());
  EXPECT_THAT(DecisionLine(MakeDecisionRecord(absl::FromUnixSeconds(1795988000), "abcdefgh", 1001,
                                              leash::v1::SURFACE_TOOLS, enforced, subject)),
              ::testing::Not(HasSubstr("enforced")));
  // An allow is an allow, audited or not.
  Decision allow;
  allow.verdict = Verdict::kAllow;
  EXPECT_TRUE(UnderAudit(allow, true).enforced);
}

}  // namespace
}  // namespace leash::engine
