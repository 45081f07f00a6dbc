#include "proxy/dns_message.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proxy/testing/dns_wire.h"

namespace leash::proxy::dns {
namespace {

using ::testing::HasSubstr;
using testing_wire::Answer;
using testing_wire::Query;

TEST(ParseMessage, ReadsAQuery) {
  const std::string bytes = Query(0x1234, {{"GitHub.com.", kTypeA}});
  absl::StatusOr<Message> message = ParseMessage(bytes);
  ASSERT_TRUE(message.ok()) << message.status();
  EXPECT_EQ(message->header.id, 0x1234);
  EXPECT_FALSE(message->header.response());
  ASSERT_EQ(message->questions.size(), 1u);
  EXPECT_EQ(message->questions[0].name, "github.com");
  EXPECT_EQ(message->questions[0].type, kTypeA);
  EXPECT_EQ(message->question_end, bytes.size());
  EXPECT_FALSE(message->edns_udp_size.has_value());
}

TEST(ParseMessage, ReadsEdns0PayloadSize) {
  absl::StatusOr<Message> message =
      ParseMessage(Query(1, {{"github.com", kTypeAaaa}}, /*edns_udp_size=*/1232));
  ASSERT_TRUE(message.ok()) << message.status();
  EXPECT_EQ(message->edns_udp_size, 1232);
}

TEST(ParseMessage, EscapesBytesAHostNameCannotHold) {
  std::string bytes = Query(1, {{"x.evil.test", kTypeA}});
  // Turn the first label "x" into "\0" and splice in a label holding a dot.
  bytes[13] = '\0';
  absl::StatusOr<Message> message = ParseMessage(bytes);
  ASSERT_TRUE(message.ok()) << message.status();
  EXPECT_EQ(message->questions[0].name, "\\000.evil.test");
  std::string dotted = Query(1, {{"ab.evil.test", kTypeA}});
  dotted[14] = '.';
  message = ParseMessage(dotted);
  ASSERT_TRUE(message.ok());
  EXPECT_EQ(message->questions[0].name, "a\\..evil.test");
}

struct BadCase {
  std::string name;
  std::string bytes;
  std::string error;
};

std::string Header(uint16_t qd, uint16_t an, uint16_t ar) {
  return std::string({0, 9, 1, 0, 0, static_cast<char>(qd), 0, static_cast<char>(an), 0, 0, 0,
                      static_cast<char>(ar)});
}

TEST(ParseMessage, RefusesWhatIsMalformed) {
  const std::string qtail = std::string("\0\1\0\1", 4);
  const std::vector<BadCase> cases = {
      {"Short", "\x12\x34", "shorter than its 12-byte header"},
      {"PointerToItself", Header(1, 0, 0) + "\xc0\x0c" + qtail, "does not point back"},
      {"PointerForward", Header(1, 0, 0) + "\xc0\x20" + qtail + std::string(20, '\0'),
       "does not point back"},
      {"LabelTooLong", Header(1, 0, 0) + "\x40" + std::string(64, 'a') + std::string(1, '\0') + qtail,
       "label type other than"},
      {"NameTooLong",
       Header(1, 0, 0) + [] {
         std::string s;
         for (int i = 0; i < 4; ++i) s += "\x3f" + std::string(63, 'b');
         return s;
       }() + std::string(1, '\0') + qtail,
       "longer than 255 bytes"},
      {"NameRunsPastEnd", Header(1, 0, 0) + "\x05" + "ab", "label runs past the end"},
      {"QuestionCut", Header(1, 0, 0) + std::string(1, '\0') + "\0\1", "question cut short"},
      {"TrailingBytes", Query(1, {{"github.com", kTypeA}}) + "xx", "2 bytes after the last record"},
      {"TwoOpt", Query(1, {{"github.com", kTypeA}}, 1232, /*opt_records=*/2), "second OPT record"},
      {"CountsBeyondBytes", Header(1, 3, 0) + std::string(1, '\0') + qtail, "runs past the end"},
  };
  for (const BadCase& test : cases) {
    absl::StatusOr<Message> message = ParseMessage(test.bytes);
    ASSERT_FALSE(message.ok()) << test.name;
    EXPECT_EQ(message.status().code(), absl::StatusCode::kInvalidArgument) << test.name;
    EXPECT_THAT(message.status().message(), HasSubstr(test.error)) << test.name;
  }
}

TEST(ParseMessage, RefusesA4KiBGarbageDatagram) {
  std::string garbage;
  for (int i = 0; i < 4096; ++i) garbage += static_cast<char>((i * 131 + 7) % 256);
  EXPECT_FALSE(ParseMessage(garbage).ok());
}

TEST(AddressesFor, FollowsCnamesThroughCompressedNames) {
  const std::string bytes = Answer(9, "www.example.org", kTypeA,
                                   {{"www.example.org", kTypeCname, 300, "edge.example.net"},
                                    {"edge.example.net", kTypeA, 60, "192.0.2.10"},
                                    {"other.example", kTypeA, 5, "192.0.2.99"}});
  absl::StatusOr<Message> message = ParseMessage(bytes);
  ASSERT_TRUE(message.ok()) << message.status();
  AnswerAddresses found = AddressesFor(*message);
  ASSERT_EQ(found.addresses.size(), 1u);
  EXPECT_EQ(engine::FormatIpAddress(found.addresses[0]), "192.0.2.10");
  EXPECT_EQ(found.ttl, 60u);
}

TEST(Replies, NxDomainEchoesTheQuestionAndAnswersTheQuery) {
  const std::string query = Query(0xbeef, {{"c2VjcmV0.exfil.evil.test", kTypeTxt}});
  absl::StatusOr<Message> parsed = ParseMessage(query);
  ASSERT_TRUE(parsed.ok());
  const std::string reply = BuildReply(query, *parsed, Rcode::kNxDomain);
  absl::StatusOr<Message> back = ParseMessage(reply);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(AnswersQuery(*parsed, *back));
  EXPECT_EQ(back->header.rcode(), static_cast<uint8_t>(Rcode::kNxDomain));
  EXPECT_TRUE(back->answers.empty());
}

TEST(Replies, TruncateKeepsTheQuestionAndSetsTc) {
  const std::string bytes = Answer(3, "big.example.org", kTypeA,
                                   {{"big.example.org", kTypeA, 60, "192.0.2.1"},
                                    {"big.example.org", kTypeA, 60, "192.0.2.2"}});
  absl::StatusOr<Message> message = ParseMessage(bytes);
  ASSERT_TRUE(message.ok());
  const std::string cut = Truncate(bytes, *message);
  absl::StatusOr<Message> back = ParseMessage(cut);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->header.truncated());
  EXPECT_TRUE(back->answers.empty());
  EXPECT_LT(cut.size(), bytes.size());
  EXPECT_TRUE(AnswersQuery(*message, *back));
  EXPECT_EQ(back->questions[0].name, "big.example.org");
}

TEST(Replies, HeaderOnlyKeepsTheId) {
  absl::StatusOr<Message> back = ParseMessage(BuildHeaderOnlyReply("\xab\xcdgarbage", Rcode::kFormErr));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->header.id, 0xabcd);
  EXPECT_EQ(back->header.rcode(), static_cast<uint8_t>(Rcode::kFormErr));
}

}  // namespace
}  // namespace leash::proxy::dns
