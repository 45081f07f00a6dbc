// Masking keeps a short prefix and the last 4 characters, reveals at most a third of a short
// secret, and never splits a character.
#include "engine/mask.h"

#include "gtest/gtest.h"

namespace leash::tools {
namespace {

TEST(MaskSecretTest, LongSecretKeepsFourAndFour) {
  EXPECT_EQ(MaskSecret("ghp_R8dKq2ZfT0wLx7NvB4mYc1HsJ9pEa6GuW3oV"), "ghp_****W3oV");
}

TEST(MaskSecretTest, ShortSecretRevealsAtMostAThird) {
  EXPECT_EQ(MaskSecret("AKIAZ7Q2LM4XR9TB6WNC"), "AKI****WNC");  // 20 chars: 3 + 3
  EXPECT_EQ(MaskSecret("Zr5Xy7Wb1Nc4"), "Zr****c4");            // 12 chars: 2 + 2
  EXPECT_EQ(MaskSecret("Passw0rd"), "P****d");                  // 8 chars: 1 + 1
  EXPECT_EQ(MaskSecret("abcde"), "****e");
  EXPECT_EQ(MaskSecret("ab"), "****");
  EXPECT_EQ(MaskSecret(""), "****");
}

TEST(MaskSecretTest, CountsCharactersNotBytes) {
  // 24 two-byte characters: four kept at each end, none split.
  std::string s;
  for (int i = 0; i < 24; ++i) s += "\xc3\xa9";  // é
  EXPECT_EQ(MaskSecret(s), "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9****\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9");
}

TEST(MaskSpansTest, ReplacesEachSpan) {
  EXPECT_EQ(MaskSpans("a=Zr5Xy7Wb1Nc4 b=Passw0rd!", {{2, 14}, {17, 25}}), "a=Zr****c4 b=P****d!");
  EXPECT_EQ(MaskSpans("nothing", {}), "nothing");
}

TEST(Utf8PrefixTest, EndsOnACharacterBoundary) {
  EXPECT_EQ(Utf8Prefix("ab\xc3\xa9", 3), "ab");
  EXPECT_EQ(Utf8Prefix("ab\xc3\xa9", 4), "ab\xc3\xa9");
  EXPECT_EQ(Utf8Prefix("abc", 10), "abc");
}

}  // namespace
}  // namespace leash::tools
