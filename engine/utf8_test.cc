#include "engine/utf8.h"

#include <string>

#include "gtest/gtest.h"

namespace leash::engine {
namespace {

TEST(IsValidUtf8, AcceptsUtf8AndRefusesStrayBytes) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("/srv/caf\xc3\xa9"));
  EXPECT_FALSE(IsValidUtf8("/etc/shadow\xff"));
  EXPECT_FALSE(IsValidUtf8("\xc0\x80"));  // overlong
}

TEST(EscapeInvalidUtf8, ShowsEachStrayByteAndKeepsValidText) {
  EXPECT_EQ(EscapeInvalidUtf8("/etc/caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x95"),
            "/etc/caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x95");
  EXPECT_EQ(EscapeInvalidUtf8("/etc/shadow\xff"), "/etc/shadow\\xff");
  EXPECT_EQ(EscapeInvalidUtf8("\xc0\x80"), "\\xc0\\x80");              // overlong NUL
  EXPECT_EQ(EscapeInvalidUtf8("a\xe2\x82"), "a\\xe2\\x82");            // cut short at the end
  EXPECT_EQ(EscapeInvalidUtf8("\xe2\x82z\x80"), "\\xe2\\x82z\\x80");  // cut short, stray tail
  EXPECT_EQ(EscapeInvalidUtf8(std::string("nul\0ok", 6)), std::string("nul\0ok", 6));
  EXPECT_EQ(EscapeInvalidUtf8(""), "");
}

}  // namespace
}  // namespace leash::engine
