// A tokenizer written as GGUF keys (gguf_keys.hpp) reads back as the same
// tokenizer through the GGUF loader, and the split rules of a tokenizer.json
// are named by the GGUF name that gives them.
#include <gtest/gtest.h>

#include "model/gguf.hpp"
#include "model/gguf_writer.hpp"
#include "tiny_vocab_testing.hpp"
#include "tokenizer/gguf_keys.hpp"
#include "tokenizer/gguf_loader.hpp"
#include "tokenizer/regex_splitter.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera::tok {
namespace {

// A spec as the tokenizer.json loader leaves it: split rules as regexes, no name.
TokenizerSpec json_like(const std::string& pre) {
  TokenizerSpec spec = testing::tiny_bpe({"he", "lo", "llo", "hello"}, {{"h", "e"}, {"l", "o"}, {"l", "lo"}, {"he", "llo"}},
                                         {"<|im_start|>", "<|im_end|>"});
  spec.source = "tokenizer.json";
  spec.pre.clear();
  spec.pre_regexes = *pre_tokenizer_regexes(pre);
  spec.ignore_merges = pre_tokenizer_ignores_merges(pre);  // what tokenizer.json says for such a model
  spec.tokens.push_back({"<extra>", 0.0f, TokenType::user_defined});
  spec.bos_id = static_cast<int32_t>(spec.tokens.size()) - 3;
  spec.eos_id = static_cast<int32_t>(spec.tokens.size()) - 2;
  spec.pad_id = spec.eos_id;
  spec.add_bos = false;
  spec.chat_template = "{{ messages }}";
  return spec;
}

Result<TokenizerSpec> through_gguf(const TokenizerSpec& spec, int64_t pad = 0) {
  GgufWriter writer;
  writer.set_string("general.architecture", "llama");
  TESSERA_RETURN_IF_ERROR(write_gguf_tokenizer(spec, static_cast<int64_t>(spec.tokens.size()) + pad, writer));
  auto file = GgufFile::open_memory(writer.to_bytes(), "written.gguf");
  if (!file.ok()) return file.status();
  return tokenizer_spec_from_gguf(**file);
}

TEST(GgufTokenizerKeys, ReadBackAsTheSameTokenizer) {
  const TokenizerSpec spec = json_like("qwen2");
  auto back = through_gguf(spec);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->pre, "qwen2");
  ASSERT_EQ(back->tokens.size(), spec.tokens.size());
  for (size_t i = 0; i < spec.tokens.size(); ++i) {
    EXPECT_EQ(back->tokens[i].text, spec.tokens[i].text) << i;
    EXPECT_EQ(back->tokens[i].type, spec.tokens[i].type) << i;
  }
  EXPECT_EQ(back->merges, spec.merges);
  EXPECT_EQ(back->bos_id, spec.bos_id);
  EXPECT_EQ(back->eos_id, spec.eos_id);
  EXPECT_EQ(back->pad_id, spec.pad_id);
  EXPECT_EQ(back->unk_id, std::nullopt);
  EXPECT_EQ(back->add_bos, false);
  EXPECT_EQ(back->chat_template, spec.chat_template);

  // Both encode text alike, specials included.
  auto a = Tokenizer::create(spec);
  auto b = Tokenizer::create(*back);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  for (const char* text : {"hello world 123", "<|im_start|>hello<|im_end|>", "he llo  hello\n\n42"})
    EXPECT_EQ(a->encode(text, false, true), b->encode(text, false, true)) << text;
}

// An embedding with more rows than the tokenizer has tokens (Qwen2.5: 151665
// tokens, 151936 rows): the list is padded with unused tokens, as llama.cpp's
// converter pads it; fewer rows than tokens is refused.
TEST(GgufTokenizerKeys, TheTokenListIsPaddedToTheEmbeddingsRows) {
  const TokenizerSpec spec = json_like("qwen2");
  auto back = through_gguf(spec, 3);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->tokens.size(), spec.tokens.size() + 3);
  const size_t last = back->tokens.size() - 1;
  EXPECT_EQ(back->tokens[last].text, "[PAD" + std::to_string(last) + "]");
  EXPECT_EQ(back->tokens[last].type, TokenType::unused);
  GgufWriter writer;
  const Status fewer = write_gguf_tokenizer(spec, static_cast<int64_t>(spec.tokens.size()) - 1, writer);
  ASSERT_FALSE(fewer.ok());
  EXPECT_NE(fewer.message().find("but the embedding has only"), std::string::npos) << fewer.message();
}

// Added tokens tokenizer.json does not call special but that look like
// control tokens are written as control tokens, as llama.cpp's converter
// writes them (Qwen2.5's "<|fim_prefix|>" is "special": false).
TEST(GgufTokenizerKeys, AddedTokensThatLookLikeControlTokensAreControlTokens) {
  TokenizerSpec spec = json_like("qwen2");
  for (const char* text : {"<|fim_prefix|>", "<unused7>", "<|", "<tool>"})
    spec.tokens.push_back({text, 0.0f, TokenType::user_defined});
  auto back = through_gguf(spec);
  ASSERT_TRUE(back.ok()) << back.status().message();
  const size_t n = back->tokens.size();
  EXPECT_EQ(back->tokens[n - 4].type, TokenType::control);
  EXPECT_EQ(back->tokens[n - 3].type, TokenType::control);
  EXPECT_EQ(back->tokens[n - 2].type, TokenType::user_defined) << "'<|' alone is not wrapped";
  EXPECT_EQ(back->tokens[n - 1].type, TokenType::user_defined);
}

TEST(GgufTokenizerKeys, SplitRulesAreNamedAsLlamaCppNamesThem) {
  for (const char* pre : {"smollm", "qwen2", "llama-bpe", "gpt-2", "default"}) {
    auto name = gguf_pre_tokenizer_name(json_like(pre));
    ASSERT_TRUE(name.ok()) << pre;
    EXPECT_EQ(*name, pre);
  }
  // Names that share their rules with one above come out as that one.
  auto starcoder = gguf_pre_tokenizer_name(json_like("starcoder"));
  ASSERT_TRUE(starcoder.ok());
  EXPECT_EQ(*starcoder, "smollm");
  // A spec that carries its GGUF name keeps it.
  TokenizerSpec named = json_like("qwen2");
  named.pre = "deepseek-r1-qwen";
  EXPECT_EQ(*gguf_pre_tokenizer_name(named), "deepseek-r1-qwen");
}

TEST(GgufTokenizerKeys, RefusesWhatAGgufNameCannotSay) {
  TokenizerSpec odd = json_like("gpt-2");
  odd.pre_regexes = {R"(\p{N}{1,2})", odd.pre_regexes[0]};
  auto name = gguf_pre_tokenizer_name(odd);
  ASSERT_FALSE(name.ok());
  EXPECT_EQ(name.status().code(), StatusCode::unsupported);
  EXPECT_NE(name.status().message().find("tokenizer.json"), std::string::npos) << name.status().message();
  GgufWriter writer;
  EXPECT_FALSE(write_gguf_tokenizer(odd, 1000, writer).ok());

  TokenizerSpec unsplit = json_like("gpt-2");
  unsplit.pre_regexes.clear();
  unsplit.pre = "none";
  EXPECT_FALSE(gguf_pre_tokenizer_name(unsplit).ok()) << "llama.cpp refuses an unknown pre-tokenizer name";

  // Llama 3's rules with merges applied to whole-token words: no GGUF name says that.
  TokenizerSpec merging = json_like("llama-bpe");
  merging.ignore_merges = false;
  EXPECT_FALSE(gguf_pre_tokenizer_name(merging).ok());
  merging.ignore_merges = true;
  EXPECT_EQ(*gguf_pre_tokenizer_name(merging), "llama-bpe");

  TokenizerSpec stripping = json_like("qwen2");
  stripping.tokens.back().lstrip = true;
  const Status strip = write_gguf_tokenizer(stripping, 1000, writer);
  ASSERT_FALSE(strip.ok());
  EXPECT_NE(strip.message().find("'<extra>' strips the whitespace"), std::string::npos) << strip.message();

  const Status spm = write_gguf_tokenizer(testing::tiny_spm({{"\xE2\x96\x81hi", -1.0f}}), 1000, writer);
  ASSERT_FALSE(spm.ok());
  EXPECT_NE(spm.message().find("byte-level BPE"), std::string::npos) << spm.message();
}

}  // namespace
}  // namespace tessera::tok
