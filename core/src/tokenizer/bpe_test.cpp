// Byte-level BPE on hand-made vocabularies: merge order, pre-tokenization,
// special and added tokens, BOS handling, decoding.
#include <gtest/gtest.h>

#include "tokenizer/regex_splitter.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/tiny_vocab_testing.hpp"

namespace tessera::tok {
namespace {

using testing::tiny_bpe;
using Ids = std::vector<int32_t>;

std::vector<std::string> split_with(const std::vector<std::string>& regexes, std::string_view text) {
  auto s = RegexSplitter::create(regexes);
  EXPECT_TRUE(s.ok()) << s.status().message();
  std::vector<std::string> out;
  for (auto p : s->split(text)) out.emplace_back(p);
  return out;
}

TEST(RegexSplit, Gpt2Pattern) {
  const std::vector<std::string> expected = {"Hello", ",", " world", "!", " ", " 123", "\n", "\n", "abc", "'s"};
  EXPECT_EQ(split_with({gpt2_split_regex()}, "Hello, world!  123\n\nabc's"), expected);
  const std::vector<std::string> unicode = {"h\xC3\xA9llo", " w\xC3\xB6rld", " \xE4\xBD\xA0\xE5\xA5\xBD"};
  EXPECT_EQ(split_with({gpt2_split_regex()}, "h\xC3\xA9llo w\xC3\xB6rld \xE4\xBD\xA0\xE5\xA5\xBD"), unicode);
}

TEST(RegexSplit, DigitGroupingDiffersByPreTokenizer) {
  auto llama3 = pre_tokenizer_regexes("llama-bpe");
  auto qwen2 = pre_tokenizer_regexes("qwen2");
  auto smollm = pre_tokenizer_regexes("smollm");
  ASSERT_TRUE(llama3.ok() && qwen2.ok() && smollm.ok());
  EXPECT_EQ(split_with(*llama3, "abc 12345"), (std::vector<std::string>{"abc", " ", "123", "45"}));
  EXPECT_EQ(split_with(*qwen2, "abc 12345"), (std::vector<std::string>{"abc", " ", "1", "2", "3", "4", "5"}));
  // smollm: digits isolated first, then GPT-2 (" " stays alone before a digit).
  EXPECT_EQ(split_with(*smollm, "ab 12"), (std::vector<std::string>{"ab", " ", "1", "2"}));
  // Llama 3's contractions are case-insensitive.
  EXPECT_EQ(split_with(*llama3, "IT'S"), (std::vector<std::string>{"IT", "'S"}));
}

TEST(RegexSplit, InvalidUtf8IsKeptNotDropped) {
  const std::string text = "ab\xFF\xFE cd";
  std::string joined;
  for (const auto& p : split_with({gpt2_split_regex()}, text)) joined += p;
  EXPECT_EQ(joined, text);
}

TEST(RegexSplit, UnknownPreTokenizerIsAnError) {
  const auto r = pre_tokenizer_regexes("no-such-pre");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no-such-pre"), std::string::npos);
}

// ids: 256 he, 257 ll, 258 hell, 259 hello, 260 " w", 261 or, 262 " wor"
TokenizerSpec hello_spec() {
  return tiny_bpe({"he", "ll", "hell", "hello", " w", "or", " wor"},
                  {{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {" ", "w"}, {"o", "r"}, {" w", "or"}},
                  {"<|im_end|>"});
}

TEST(Bpe, MergesByRank) {
  auto tok = Tokenizer::create(hello_spec());
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  EXPECT_EQ(tok->encode("hello world", false), (Ids{259, 262, 'l', 'd'}));
  EXPECT_EQ(tok->decode(Ids{259, 262, 'l', 'd'}), "hello world");
}

TEST(Bpe, LowerRankWinsOverPosition) {
  // "abc": with b+c ranked first the result is a|bc; reversed ranks give ab|c.
  auto first = Tokenizer::create(tiny_bpe({"ab", "bc"}, {{"b", "c"}, {"a", "b"}}));
  auto second = Tokenizer::create(tiny_bpe({"ab", "bc"}, {{"a", "b"}, {"b", "c"}}));
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->encode("abc", false), (Ids{'a', 257}));
  EXPECT_EQ(second->encode("abc", false), (Ids{256, 'c'}));
}

TEST(Bpe, EqualRanksMergeLeftmostFirst) {
  auto tok = Tokenizer::create(tiny_bpe({"aa"}, {{"a", "a"}}));
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ(tok->encode("aaa", false), (Ids{256, 'a'}));
}

TEST(Bpe, IgnoreMergesEmitsWholeWordTokens) {
  // "abc" is a token but no merge path reaches it; Llama 3 style emits it whole.
  auto spec = tiny_bpe({"abc"}, {});
  spec.ignore_merges = true;
  auto tok = Tokenizer::create(spec);
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ(tok->encode("abc", false), (Ids{256}));
  spec.ignore_merges = false;
  auto plain = Tokenizer::create(spec);
  EXPECT_EQ(plain->encode("abc", false), (Ids{'a', 'b', 'c'}));
}

TEST(Bpe, ControlTokensOnlyWithParseSpecial) {
  auto tok = Tokenizer::create(hello_spec());
  ASSERT_TRUE(tok.ok());
  const int32_t im_end = 263;
  EXPECT_EQ(tok->encode("hello<|im_end|>", false, true), (Ids{259, im_end}));
  Ids raw = {259};
  for (char c : std::string("<|im_end|>")) raw.push_back(static_cast<uint8_t>(c));
  EXPECT_EQ(tok->encode("hello<|im_end|>", false, false), raw);
  EXPECT_EQ(tok->decode(Ids{259, im_end}), "hello");
  EXPECT_EQ(tok->decode(Ids{259, im_end}, true), "hello<|im_end|>");
  EXPECT_EQ(tok->eot_id(), im_end);
  EXPECT_TRUE(tok->is_end_of_generation(im_end));
  EXPECT_FALSE(tok->is_end_of_generation(259));
}

TEST(Bpe, UserDefinedTokensAlwaysMatch) {
  auto spec = hello_spec();
  spec.tokens.push_back({"<tool>", 0.0f, TokenType::user_defined});
  auto tok = Tokenizer::create(spec);
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ(tok->encode("<tool>hello", false, false), (Ids{264, 259}));
  EXPECT_EQ(tok->decode(Ids{264, 259}), "<tool>hello");
}

TEST(Bpe, LongestSpecialWins) {
  auto spec = tiny_bpe({}, {}, {"<a>", "<a><b>"});
  auto tok = Tokenizer::create(spec);
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ(tok->encode("<a><b><a>", false), (Ids{257, 256}));
}

TEST(Bpe, BosFollowsMetadataUnlessOverridden) {
  auto spec = hello_spec();
  spec.bos_id = 263;
  auto tok = Tokenizer::create(spec);  // gpt-2 pre: no BOS by default
  ASSERT_TRUE(tok.ok());
  EXPECT_FALSE(tok->add_bos());
  EXPECT_EQ(tok->encode("hello"), (Ids{259}));
  EXPECT_EQ(tok->encode("hello", true), (Ids{263, 259}));
  spec.add_bos = true;
  spec.add_eos = true;
  spec.eos_id = 263;
  auto with = Tokenizer::create(spec);
  ASSERT_TRUE(with.ok());
  EXPECT_EQ(with->encode("hello"), (Ids{263, 259, 263}));
  EXPECT_EQ(with->encode("hello", false), (Ids{259}));
}

TEST(Bpe, EncodesEveryByteSequence) {
  auto tok = Tokenizer::create(hello_spec());
  ASSERT_TRUE(tok.ok());
  const std::string junk = "\xFF\xC3 \x00\x80zz";
  const auto ids = tok->encode(junk, false);
  EXPECT_EQ(tok->decode(ids), junk);
}

TEST(Bpe, BadSpecsAreClearErrors) {
  auto empty = tiny_bpe({}, {});
  empty.tokens.clear();
  auto r = Tokenizer::create(empty);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("tiny-bpe"), std::string::npos);
  EXPECT_NE(r.status().message().find("empty"), std::string::npos);

  auto bad_merge = tiny_bpe({"ab"}, {{"a", "q"}});
  bad_merge.merges.back().second = "qq";
  r = Tokenizer::create(bad_merge);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'qq'"), std::string::npos) << r.status().message();

  auto bad_id = tiny_bpe({}, {});
  bad_id.eos_id = 999;
  r = Tokenizer::create(bad_id);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("999"), std::string::npos);

  auto bad_pre = tiny_bpe({}, {});
  bad_pre.pre = "martian";
  r = Tokenizer::create(bad_pre);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("martian"), std::string::npos);

  auto bad_regex = tiny_bpe({}, {});
  bad_regex.pre_regexes = {"(unclosed"};
  r = Tokenizer::create(bad_regex);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("(unclosed"), std::string::npos);
}

}  // namespace
}  // namespace tessera::tok
