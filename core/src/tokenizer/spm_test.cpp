// SentencePiece-style encoding on a hand-made vocabulary: score-ordered
// merges, the leading space, byte fallback and the unknown token.
#include <gtest/gtest.h>

#include "tokenizer/tokenizer.hpp"
#include "tokenizer/tiny_vocab_testing.hpp"

namespace tessera::tok {
namespace {

using testing::tiny_spm;
using Ids = std::vector<int32_t>;
constexpr int32_t kByte0 = 3;  // id of <0x00>

// ids from 259: ▁ h e l o ▁h el ll ▁he
TokenizerSpec hello_spm() {
  return tiny_spm({{"\xE2\x96\x81", -5}, {"h", -3}, {"e", -3}, {"l", -3}, {"o", -3},
                   {"\xE2\x96\x81h", -2}, {"el", -4}, {"ll", -1}, {"\xE2\x96\x81he", -1.5f}});
}

TEST(Spm, MergesHighestScoreFirst) {
  auto tok = Tokenizer::create(hello_spm());
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  // ▁ h e l l o -> ll (-1) -> ▁h (-2) -> ▁he (-1.5); "el" never wins.
  EXPECT_EQ(tok->encode("hello", false), (Ids{267, 266, 263}));
  EXPECT_EQ(tok->decode(Ids{267, 266, 263}), "hello");
}

TEST(Spm, AddsBosAndLeadingSpaceByDefault) {
  auto tok = Tokenizer::create(hello_spm());
  ASSERT_TRUE(tok.ok());
  EXPECT_TRUE(tok->add_bos());
  EXPECT_EQ(tok->encode("hello"), (Ids{1, 267, 266, 263}));
  EXPECT_EQ(tok->decode(tok->encode("hello")), "hello");
  EXPECT_EQ(tok->decode(tok->encode(" hello  ")), " hello  ");
}

TEST(Spm, ByteFallbackForUnknownCharacters) {
  auto tok = Tokenizer::create(hello_spm());
  ASSERT_TRUE(tok.ok());
  // é = C3 A9 is not a piece: two byte tokens.
  EXPECT_EQ(tok->encode("h\xC3\xA9", false), (Ids{264, kByte0 + 0xC3, kByte0 + 0xA9}));
  EXPECT_EQ(tok->decode(Ids{264, kByte0 + 0xC3, kByte0 + 0xA9}), "h\xC3\xA9");
}

TEST(Spm, UnknownTokenWithoutByteFallback) {
  TokenizerSpec s;
  s.source = "no-bytes";
  s.kind = TokenizerKind::spm;
  s.tokens = {{"<unk>", 0, TokenType::unknown}, {"<s>", 0, TokenType::control}, {"\xE2\x96\x81", -1}, {"a", -1}};
  s.unk_id = 0;
  s.bos_id = 1;
  auto tok = Tokenizer::create(s);
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ(tok->encode("a\xC3\xA9", false), (Ids{2, 3, 0, 0}));
}

TEST(Spm, SpecialTokensResetTheLeadingSpace) {
  auto tok = Tokenizer::create(hello_spm());
  ASSERT_TRUE(tok.ok());
  // After a special token the next fragment gets a space again, as in llama.cpp.
  EXPECT_EQ(tok->encode("hello</s>hello", false), (Ids{267, 266, 263, 2, 267, 266, 263}));
  EXPECT_EQ(tok->encode("hello</s>hello", false, false).front(), 267);
}

TEST(Spm, DisabledSpacePrefix) {
  auto spec = hello_spm();
  spec.add_space_prefix = false;
  auto tok = Tokenizer::create(spec);
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ(tok->encode("hello", false), (Ids{260, 261, 266, 263}));
}

}  // namespace
}  // namespace tessera::tok
