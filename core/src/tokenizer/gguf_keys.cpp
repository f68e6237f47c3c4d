#include "tokenizer/gguf_keys.hpp"

#include <array>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "tokenizer/regex_splitter.hpp"

namespace tessera::tok {

namespace {

// llama.cpp's converter writes an added token that tokenizer.json does not
// call special as a control token all the same when it looks like one
// (Qwen2.5's "<|fim_prefix|>" and its kind, deepseek's "<｜...｜>", gemma's
// "<unused..>", "<pad>", "<mask>"), so that text which merely spells it is
// not read as it; the files Tessera writes type them alike.
bool looks_like_control_token(std::string_view text) {
  const auto wrapped = [&](std::string_view open, std::string_view close) {
    return text.starts_with(open) && text.ends_with(close);
  };
  return text == "<pad>" || text == "<mask>" || text == "<2mass>" || text == "[@BOS@]" || wrapped("<|", "|>") ||
         wrapped("<\xEF\xBD\x9C", "\xEF\xBD\x9C>") || wrapped("<unused", ">");
}

}  // namespace

Result<std::string> gguf_pre_tokenizer_name(const TokenizerSpec& spec) {
  // "none" (a ByteLevel without its regex, no Split): Tessera's own name for
  // splitting nothing, which llama.cpp does not know.
  if (spec.pre == "none")
    return Unsupported(fmt::format("{}: the pre-tokenizer does not split text at all, which no GGUF "
                                   "tokenizer.ggml.pre name that llama.cpp knows says",
                                   spec.source));
  if (!spec.pre.empty()) return spec.pre;
  // Tried in this order: where two names give the same rules, the first is
  // the one llama.cpp's converter writes for the models that use them.
  static constexpr std::array<std::string_view, 8> kNames = {
      "smollm", "qwen2", "llama-bpe", "gpt-2", "qwen35", "default", "falcon", "deepseek-llm"};
  for (std::string_view name : kNames) {
    auto regexes = pre_tokenizer_regexes(name);
    // The name also decides whether a word that is a token is emitted whole.
    const bool ignores_merges = pre_tokenizer_ignores_merges(name);
    if (regexes.ok() && *regexes == spec.pre_regexes && spec.ignore_merges.value_or(ignores_merges) == ignores_merges)
      return std::string(name);
  }
  return Unsupported(fmt::format(
      "{}: the pre-tokenizer's split rules (with ignore_merges {}) match no GGUF tokenizer.ggml.pre name Tessera "
      "knows, so a GGUF file could not say how to split text",
      spec.source, spec.ignore_merges.value_or(false)));
}

Status write_gguf_tokenizer(const TokenizerSpec& spec, int64_t vocab_rows, GgufWriter& writer) {
  if (spec.kind != TokenizerKind::bpe)
    return Unsupported(fmt::format("{}: only byte-level BPE tokenizers are written as GGUF here (SentencePiece "
                                   "scores and normalization have no exact GGUF form in this converter)",
                                   spec.source));
  auto pre = gguf_pre_tokenizer_name(spec);
  if (!pre.ok()) return pre.status();
  for (const SpecToken& t : spec.tokens)
    if (t.lstrip || t.rstrip)
      return Unsupported(fmt::format("{}: added token '{}' strips the whitespace beside it, which GGUF has no key "
                                     "for: the GGUF file would tokenize text around it differently",
                                     spec.source, t.text));

  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  tokens.reserve(spec.tokens.size());
  types.reserve(spec.tokens.size());
  for (const SpecToken& t : spec.tokens) {
    tokens.push_back(t.text);
    const bool control = t.type == TokenType::user_defined && looks_like_control_token(t.text);
    types.push_back(static_cast<int32_t>(control ? TokenType::control : t.type));
  }
  // Rows of the embedding past the tokenizer's tokens (Qwen2.5 pads 151665
  // tokens to 151936 rows): GGUF's token list is as long as the embedding.
  if (vocab_rows < static_cast<int64_t>(tokens.size()))
    return CorruptData(fmt::format("{}: {} tokens, but the embedding has only {} rows", spec.source,
                                       tokens.size(), vocab_rows));
  for (auto id = static_cast<int64_t>(tokens.size()); id < vocab_rows; ++id) {
    tokens.push_back(fmt::format("[PAD{}]", id));
    types.push_back(static_cast<int32_t>(TokenType::unused));
  }
  std::vector<std::string> merges;
  merges.reserve(spec.merges.size());
  for (const auto& [left, right] : spec.merges) merges.push_back(left + " " + right);

  writer.set_string("tokenizer.ggml.model", "gpt2");
  writer.set_string("tokenizer.ggml.pre", *pre);
  writer.set_string_array("tokenizer.ggml.tokens", tokens);
  writer.set_i32_array("tokenizer.ggml.token_type", types);
  writer.set_string_array("tokenizer.ggml.merges", merges);
  const std::pair<const char*, const std::optional<int32_t>*> ids[] = {
      {"tokenizer.ggml.bos_token_id", &spec.bos_id},     {"tokenizer.ggml.eos_token_id", &spec.eos_id},
      {"tokenizer.ggml.eot_token_id", &spec.eot_id},     {"tokenizer.ggml.eom_token_id", &spec.eom_id},
      {"tokenizer.ggml.unknown_token_id", &spec.unk_id}, {"tokenizer.ggml.padding_token_id", &spec.pad_id}};
  for (const auto& [key, id] : ids)
    if (*id) writer.set_u32(key, static_cast<uint32_t>(**id));
  if (spec.add_bos) writer.set_bool("tokenizer.ggml.add_bos_token", *spec.add_bos);
  if (spec.add_eos) writer.set_bool("tokenizer.ggml.add_eos_token", *spec.add_eos);
  if (!spec.chat_template.empty()) writer.set_string("tokenizer.chat_template", spec.chat_template);
  return Status::Ok();
}

}  // namespace tessera::tok
