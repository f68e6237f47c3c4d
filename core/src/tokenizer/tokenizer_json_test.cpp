// tokenizer.json / tokenizer_config.json loading, and clear errors on bad input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer/byte_level.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera::tok {
namespace {

using json = nlohmann::json;
using Ids = std::vector<int32_t>;

// Byte symbols 0..255, then "he" (256), "llo" ... merges as written.
json tiny_json(bool pair_merges) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_to_symbol(static_cast<uint8_t>(b))] = b;
  vocab["he"] = 256;
  vocab["ll"] = 257;
  vocab["llo"] = 258;
  vocab[bytes_to_symbols(" w")] = 259;
  json merges = json::array();
  const std::vector<std::pair<std::string, std::string>> m = {
      {"h", "e"}, {"l", "l"}, {"ll", "o"}, {bytes_to_symbols(" "), "w"}};
  for (const auto& [a, b] : m) {
    if (pair_merges) {
      merges.push_back(json::array({a, b}));
    } else {
      merges.push_back(a + " " + b);
    }
  }
  return json{
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}},
      {"added_tokens",
       json::array({json{{"id", 260}, {"content", "<|im_start|>"}, {"special", true}},
                    json{{"id", 261}, {"content", "<|im_end|>"}, {"special", true}},
                    json{{"id", 262}, {"content", "<think>"}, {"special", false}}})},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers", json::array({json{{"type", "Digits"}, {"individual_digits", true}},
                                       json{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}})}}},
  };
}

const json kConfig = {{"bos_token", "<|im_start|>"},
                      {"eos_token", {{"content", "<|im_end|>"}, {"lstrip", false}}},
                      {"add_bos_token", false},
                      {"chat_template", "{{ x }}"}};

Result<Tokenizer> load(const json& tok, const json& config = json()) {
  auto spec = tokenizer_spec_from_hf_json(tok.dump(), config.is_null() ? "" : config.dump(), "test/tokenizer.json");
  if (!spec.ok()) return spec.status();
  return Tokenizer::create(std::move(spec).value());
}

// Llama 3's tokenizer_config.json does not say add_bos_token; its
// tokenizer.json's post-processor puts <|begin_of_text|> first, and
// transformers' fast tokenizer adds it. tokenizer_config.json, where it says, wins.
TEST(TokenizerJson, APostProcessorTemplateThatStartsWithATokenAddsIt) {
  json tok = tiny_json(false);
  const json prefix = {{"SpecialToken", {{"id", "<|im_start|>"}, {"type_id", 0}}}};
  const json sequence = {{"Sequence", {{"id", "A"}, {"type_id", 0}}}};
  tok["post_processor"] = {{"type", "Sequence"},
                           {"processors", json::array({json{{"type", "ByteLevel"}},
                                                       json{{"type", "TemplateProcessing"},
                                                            {"single", json::array({prefix, sequence})}}})}};
  auto added = load(tok);
  ASSERT_TRUE(added.ok()) << added.status().message();
  EXPECT_TRUE(added->add_bos());
  EXPECT_EQ(added->bos_id(), 260);
  EXPECT_EQ(added->encode("he").front(), 260);

  auto told = load(tok, kConfig);  // add_bos_token: false
  ASSERT_TRUE(told.ok());
  EXPECT_FALSE(told->add_bos());

  tok["post_processor"] = {{"type", "TemplateProcessing"}, {"single", json::array({sequence})}};
  auto none = load(tok);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->add_bos()) << "a template that starts with the text adds nothing";
}

TEST(TokenizerJson, LoadsBothMergeForms) {
  for (bool pairs : {false, true}) {
    auto tok = load(tiny_json(pairs), kConfig);
    ASSERT_TRUE(tok.ok()) << tok.status().message();
    EXPECT_EQ(tok->encode("hello world12"), (Ids{256, 258, 259, 'o', 'r', 'l', 'd', '1', '2'}));
    EXPECT_EQ(tok->bos_id(), 260);
    EXPECT_EQ(tok->eos_id(), 261);
    EXPECT_FALSE(tok->add_bos());
    EXPECT_EQ(tok->chat_template(), "{{ x }}");
    EXPECT_TRUE(tok->is_end_of_generation(261));
  }
}

TEST(TokenizerJson, AddedTokens) {
  auto tok = load(tiny_json(false));
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  EXPECT_EQ(tok->encode("<|im_start|>he<|im_end|>"), (Ids{260, 256, 261}));
  // Non-special added tokens are matched even without parse_special.
  EXPECT_EQ(tok->encode("<think>he", false, false), (Ids{262, 256}));
  EXPECT_EQ(tok->token_type(260), TokenType::control);
  EXPECT_EQ(tok->token_type(262), TokenType::user_defined);
}

void expect_error(const json& tok, const std::string& needle, const json& config = json()) {
  auto r = load(tok, config);
  ASSERT_FALSE(r.ok()) << "expected an error mentioning " << needle;
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
}

TEST(TokenizerJson, BadInputIsAClearError) {
  auto spec = tokenizer_spec_from_hf_json("{\"model\": ", "", "x/tokenizer.json");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("x/tokenizer.json: invalid JSON"), std::string::npos);
  // A number past a double's range is nlohmann's out_of_range, not a parse_error.
  auto overflow = tokenizer_spec_from_hf_json("{\"model\": 1e999}", "", "x/tokenizer.json");
  ASSERT_FALSE(overflow.ok());
  EXPECT_NE(overflow.status().message().find("x/tokenizer.json: invalid JSON"), std::string::npos);

  json no_model = tiny_json(false);
  no_model.erase("model");
  expect_error(no_model, "\"model\" is missing");

  json no_merges = tiny_json(false);
  no_merges["model"].erase("merges");
  expect_error(no_merges, "model.merges");

  json bad_merge = tiny_json(false);
  bad_merge["model"]["merges"].push_back("h zz");
  expect_error(bad_merge, "'zz'");

  json malformed_merge = tiny_json(false);
  malformed_merge["model"]["merges"].push_back(42);
  expect_error(malformed_merge, "model.merges[4]");

  json empty = tiny_json(false);
  empty["model"]["vocab"] = json::object();
  empty.erase("added_tokens");
  expect_error(empty, "vocabulary is empty");

  json gap = tiny_json(false);
  gap["added_tokens"][2]["id"] = 300;
  expect_error(gap, "no token has id 262");

  json wordpiece = tiny_json(false);
  wordpiece["model"]["type"] = "WordPiece";
  expect_error(wordpiece, "WordPiece");

  json no_bytes = tiny_json(false);
  no_bytes["pre_tokenizer"] = {{"type", "Whitespace"}};
  expect_error(no_bytes, "Whitespace");

  json wrong_types = tiny_json(false);
  wrong_types["normalizer"] = 7;
  expect_error(wrong_types, "test/tokenizer.json");

  expect_error(tiny_json(false), "bos_token '<nope>' is not in the vocabulary", json{{"bos_token", "<nope>"}});
}

// A SentencePiece BPE model as transformers writes it to tokenizer.json:
// byte fallback, spaces as U+2581, merges whose ranks decide the pieces.
json sentencepiece_json(bool metaspace) {
  const std::string sp = "\xE2\x96\x81";
  json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}, {sp, 3}, {"a", 4}, {"b", 5},
                {sp + "a", 6}, {"ab", 7}, {sp + "ab", 8}, {"<0x63>", 9}};
  // Every cut of a piece into two pieces is listed, as transformers' converter writes them.
  json merges = json::array({sp + " a", "a b", sp + "a b", sp + " ab"});
  json j = {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"byte_fallback", true},
                       {"unk_token", "<unk>"}}},
            {"added_tokens", json::array({json{{"id", 0}, {"content", "<unk>"}, {"special", true}},
                                          json{{"id", 1}, {"content", "<s>"}, {"special", true}},
                                          json{{"id", 2}, {"content", "</s>"}, {"special", true}}})}};
  if (metaspace) {
    j["normalizer"] = nullptr;
    j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", sp}, {"prepend_scheme", "first"}, {"split", false}};
  } else {
    j["normalizer"] = {{"type", "Sequence"},
                       {"normalizers", json::array({json{{"type", "Prepend"}, {"prepend", sp}},
                                                    json{{"type", "Replace"}, {"pattern", {{"String", " "}}},
                                                         {"content", sp}}})}};
    j["pre_tokenizer"] = nullptr;
  }
  return j;
}

TEST(TokenizerJson, SentencePieceBpeMergesByRankWithByteFallback) {
  for (bool metaspace : {false, true}) {
    auto tok = load(sentencepiece_json(metaspace), json{{"bos_token", "<s>"}, {"eos_token", "</s>"}});
    ASSERT_TRUE(tok.ok()) << tok.status().message();
    // "ab" -> "▁ab": rank 0 makes "▁a" before rank 1 could make "ab", then rank 2 "▁ab"; BOS first.
    EXPECT_EQ(tok->encode("ab"), (Ids{1, 8})) << "metaspace " << metaspace;
    // "ba": no merge applies; "c" is not a piece, so its byte.
    EXPECT_EQ(tok->encode("bac"), (Ids{1, 3, 5, 4, 9})) << "metaspace " << metaspace;
    EXPECT_EQ(tok->decode(Ids{8, 3, 5}), "ab b");
  }
}

std::string sp_mark() { return "\xE2\x96\x81"; }

// The rules tokenizers' Metaspace applies (checked against the `tokenizers`
// package on these strings): no space before a segment that starts with one;
// "first" puts one only at the text's start, "always" after special tokens
// too. The legacy Prepend normalizer puts one before every segment.
TEST(TokenizerJson, SentencePieceSpacePrefixFollowsTheFilesRules) {
  const json config = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
  const auto encode = [&](const json& j, std::string_view text) {
    auto tok = load(j, config);
    EXPECT_TRUE(tok.ok()) << tok.status().message();
    return tok.ok() ? tok->encode(text, false) : Ids{};
  };
  const json prepend = sentencepiece_json(false);
  EXPECT_EQ(encode(prepend, "ab"), (Ids{8}));
  EXPECT_EQ(encode(prepend, " ab"), (Ids{3, 8}));
  EXPECT_EQ(encode(prepend, "<s>ab"), (Ids{1, 8}));

  json first = sentencepiece_json(true);
  EXPECT_EQ(encode(first, "ab"), (Ids{8}));
  EXPECT_EQ(encode(first, " ab"), (Ids{8}));
  EXPECT_EQ(encode(first, "<s>ab"), (Ids{1, 7}));
  EXPECT_EQ(encode(first, "ab<s> ab"), (Ids{8, 1, 8}));
  EXPECT_EQ(encode(first, sp_mark() + "ab"), (Ids{8})) << "a literal U+2581 counts as a leading space";

  json always = sentencepiece_json(true);
  always["pre_tokenizer"]["prepend_scheme"] = "always";
  EXPECT_EQ(encode(always, " ab"), (Ids{8}));
  EXPECT_EQ(encode(always, "<s>ab"), (Ids{1, 8}));

  json never = sentencepiece_json(true);
  never["pre_tokenizer"]["prepend_scheme"] = "never";
  EXPECT_EQ(encode(never, "ab"), (Ids{7}));
  EXPECT_EQ(encode(never, " ab"), (Ids{8}));
}

// A Metaspace that splits (its default; older files have no "split" key)
// encodes each piece from one U+2581 to the next alone, so "b▁" cannot form
// across a space; add_prefix_space = false means no prefix.
TEST(TokenizerJson, SentencePieceMetaspaceThatSplitsEncodesWordByWord) {
  const std::string sp = "\xE2\x96\x81";
  json j = sentencepiece_json(true);
  j["model"]["vocab"]["b" + sp] = 10;
  j["model"]["merges"].push_back("b " + sp);
  const json config = {{"bos_token", "<s>"}};
  auto whole = load(j, config);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_EQ(whole->encode("b ", false), (Ids{3, 10}));
  j["pre_tokenizer"].erase("split");
  auto split = load(j, config);
  ASSERT_TRUE(split.ok()) << split.status().message();
  EXPECT_EQ(split->encode("b ", false), (Ids{3, 5, 3}));
  EXPECT_EQ(split->encode("ab ab", false), (Ids{8, 8}));
  j["pre_tokenizer"]["add_prefix_space"] = false;
  auto no_prefix = load(j, config);
  ASSERT_TRUE(no_prefix.ok()) << no_prefix.status().message();
  EXPECT_EQ(no_prefix->encode("ab", false), (Ids{7}));
}

TEST(TokenizerJson, SentencePieceFilesItCannotFollowAreRefused) {
  const auto expect_refused = [](const json& j, const std::string& fragment) {
    auto spec = tokenizer_spec_from_hf_json(j.dump(), "", "test/tokenizer.json");
    ASSERT_FALSE(spec.ok()) << fragment;
    EXPECT_EQ(spec.status().code(), StatusCode::unsupported);
    EXPECT_NE(spec.status().message().find(fragment), std::string::npos) << spec.status().message();
  };
  json scheme = sentencepiece_json(true);
  scheme["pre_tokenizer"]["prepend_scheme"] = "sometimes";
  expect_refused(scheme, "prepend_scheme 'sometimes'");
  // "▁ab" can be cut into "▁" and "ab", which BPE would never join.
  json unlisted = sentencepiece_json(true);
  unlisted["model"]["merges"].erase(3);
  expect_refused(unlisted, "make '\xE2\x96\x81" "ab' but are not a listed merge");
}

TEST(TokenizerJson, SentencePieceUnknownTokenMayBeNamedByTheConfig) {
  json j = sentencepiece_json(true);
  j["model"].erase("unk_token");
  auto tok = load(j, json{{"bos_token", "<s>"}, {"unk_token", "<unk>"}});
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  EXPECT_EQ(tok->unk_id(), 0);
  EXPECT_EQ(tok->token_type(0), TokenType::unknown);
}

TEST(TokenizerJson, SentencePieceWithOtherNormalizersIsRefused) {
  json j = sentencepiece_json(false);
  j["normalizer"]["normalizers"].push_back(json{{"type", "NFKC"}});
  auto spec = tokenizer_spec_from_hf_json(j.dump(), "", "test/tokenizer.json");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("NFKC"), std::string::npos) << spec.status().message();
}

TEST(TokenizerJson, MissingFileIsNotFound) {
  auto r = load_tokenizer_json("/nonexistent/tokenizer.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::not_found);
  EXPECT_NE(r.status().message().find("/nonexistent/tokenizer.json"), std::string::npos);
}

}  // namespace
}  // namespace tessera::tok
