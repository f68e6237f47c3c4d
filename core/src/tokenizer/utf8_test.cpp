// UTF-8 helpers and GPT-2's byte map: checked against hand-computed values.
#include <gtest/gtest.h>

#include "tokenizer/byte_level.hpp"
#include "tokenizer/utf8.hpp"

namespace tessera::tok {
namespace {

TEST(Utf8, ScanStopsAtIncompleteTail) {
  const std::string euro = "\xE2\x82\xAC";  // €
  EXPECT_EQ(utf8_scan(std::string("a").append(euro)).valid_bytes, 4u);
  const auto cut = utf8_scan(std::string("a").append(euro, 0, 2));
  EXPECT_EQ(cut.valid_bytes, 1u);
  EXPECT_TRUE(cut.incomplete_tail);
  const auto bad = utf8_scan("a\xFF" "b");
  EXPECT_EQ(bad.valid_bytes, 1u);
  EXPECT_FALSE(bad.incomplete_tail);
}

TEST(Utf8, RejectsOverlongsAndSurrogates) {
  EXPECT_EQ(utf8_valid_prefix_char("\xC0\x80"), 0u);          // overlong NUL
  EXPECT_EQ(utf8_valid_prefix_char("\xED\xA0\x80"), 0u);      // surrogate D800
  EXPECT_EQ(utf8_valid_prefix_char("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(utf8_valid_prefix_char("\xF0\x9F\x98\x80"), 4u);  // 😀
}

TEST(Utf8, SanitizeReplacesEachBadByte) {
  EXPECT_EQ(utf8_sanitize("a\xFF\xFE" "b"), "a\xEF\xBF\xBD\xEF\xBF\xBD" "b");
  EXPECT_EQ(utf8_sanitize("ok \xC3\xA9"), "ok \xC3\xA9");
}

TEST(ByteLevel, KnownSymbols) {
  EXPECT_EQ(byte_to_symbol(' '), "\xC4\xA0");   // 'Ġ' U+0120
  EXPECT_EQ(byte_to_symbol('\n'), "\xC4\x8A");  // 'Ċ' U+010A
  EXPECT_EQ(byte_to_symbol('a'), "a");
  EXPECT_EQ(byte_to_symbol(0xAD), "\xC5\x83");  // soft hyphen -> U+0143, the 68th remapped byte
}

TEST(ByteLevel, RoundTripsEveryByte) {
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  const auto back = symbols_to_bytes(bytes_to_symbols(all));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, all);
  EXPECT_FALSE(symbols_to_bytes("\xE4\xBD\xA0").has_value());  // 你 is no byte symbol
}

}  // namespace
}  // namespace tessera::tok
