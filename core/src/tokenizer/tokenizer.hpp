// tokenizer/tokenizer.hpp: text <-> token ids for SentencePiece and byte-level BPE models.
//
// A Tokenizer is immutable after create(); every method is const and safe to
// call from several threads. Copies share the same tables (cheap to copy).
//
//   auto tok = load_tokenizer_json("tokenizer.json");     // or tokenizer_from_gguf(gguf)
//   std::vector<int32_t> ids = tok->encode("Hello");      // BOS as the model asks
//   std::string text = tok->decode(ids);                  // control tokens omitted
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/status.hpp"
#include "tokenizer/tokenizer_spec.hpp"

namespace tessera::tok {

class Tokenizer {
 public:
  // Validates and indexes `spec`: ids in range, merges naming known tokens, a
  // known pre-tokenizer. Errors are invalid_argument/unsupported naming spec.source.
  static Result<Tokenizer> create(TokenizerSpec spec);

  // Text -> ids. `add_bos`: unset uses the model's setting (add_bos()); false is
  // the raw mode of llama.cpp's add_special=false: neither BOS nor the EOS some
  // models append (add_eos()). `parse_special`: control tokens written in the
  // text (e.g. "<|im_end|>") become those tokens; when false they are encoded as
  // plain text. User-defined (added) tokens are always matched whole.
  std::vector<int32_t> encode(std::string_view text, std::optional<bool> add_bos = std::nullopt,
                              bool parse_special = true) const;

  // Ids -> text. Control tokens (BOS, <|im_end|>, ...) render as nothing unless
  // `render_special`; ids out of range render as nothing. For SentencePiece
  // models the space that encode() prepends is removed again, so that
  // decode(encode(x, false)) == x. Invalid UTF-8 (a character cut between ids)
  // is returned as is; use StreamDecoder for incremental, always-valid text.
  std::string decode(std::span<const int32_t> ids, bool render_special = false) const;

  // The bytes one token stands for (byte tokens: that byte; SPM: U+2581 as a
  // space; byte-level BPE: the original bytes). Control tokens: their text when
  // `render_special`, else "". Out of range: "".
  std::string token_to_piece(int32_t id, bool render_special = true) const;

  // The token's text as stored in the vocabulary; "" when out of range.
  const std::string& token_text(int32_t id) const;
  std::optional<int32_t> find_token(std::string_view text) const;
  TokenType token_type(int32_t id) const;

  int32_t vocab_size() const;
  TokenizerKind kind() const;
  // Special ids; -1 when the model has none.
  int32_t bos_id() const;
  int32_t eos_id() const;
  int32_t eot_id() const;  // end of turn: tokenizer.ggml.eot_token_id, else found by name
  int32_t pad_id() const;
  int32_t unk_id() const;
  // Whether generation ends at `id`: EOS, EOT, EOM, and the other control tokens
  // llama.cpp treats as end-of-generation by name (<|endoftext|>, <|im_end|>, ...).
  bool is_end_of_generation(int32_t id) const;
  bool add_bos() const;
  bool add_eos() const;
  bool add_space_prefix() const;  // SPM only
  const std::string& chat_template() const;
  const std::string& source() const;

 private:
  struct Impl;
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

// Loads a Hugging Face tokenizer.json (model BPE, byte-level), plus
// tokenizer_config.json from the same folder when present (bos/eos tokens,
// add_bos_token, chat_template). Errors name the file and the bad field.
Result<Tokenizer> load_tokenizer_json(const std::filesystem::path& tokenizer_json);

// The same from in-memory text; `config_json` may be empty. `source` names the
// input in error messages.
Result<TokenizerSpec> tokenizer_spec_from_hf_json(std::string_view tokenizer_json, std::string_view config_json,
                                                  const std::string& source);

}  // namespace tessera::tok
