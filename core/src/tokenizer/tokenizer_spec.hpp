// tokenizer/tokenizer_spec.hpp: everything a tokenizer is built from.
//
// Loaders (GGUF metadata, Hugging Face tokenizer.json) fill a TokenizerSpec;
// Tokenizer::create validates it and builds the lookup structures. Keeping the
// spec a plain struct lets tests build tiny vocabularies by hand.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tessera::tok {

// Values of GGUF's tokenizer.ggml.token_type (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
  undefined = 0,
  normal = 1,
  unknown = 2,
  control = 3,       // special tokens (<s>, <|im_end|>): matched only when parse_special
  user_defined = 4,  // added tokens: always matched as whole tokens, rendered as written
  unused = 5,
  byte = 6,          // SentencePiece byte fallback <0xNN>
};

enum class TokenizerKind {
  spm,  // SentencePiece: scores, U+2581 for spaces, byte fallback (GGUF model "llama")
  bpe,  // byte-level BPE with merges and a regex pre-tokenizer (GGUF model "gpt2")
};

struct SpecToken {
  std::string text;
  float score = 0.0f;
  TokenType type = TokenType::normal;
  bool lstrip = false;  // when matched as a special token, swallow whitespace on its left
  bool rstrip = false;  // ... and on its right
};

struct TokenizerSpec {
  std::string source;  // file name for error messages
  TokenizerKind kind = TokenizerKind::bpe;
  std::vector<SpecToken> tokens;  // id -> token

  // BPE only: merges in rank order (first = applied first), and the split
  // regexes; when `pre_regexes` is empty, `pre` names them (GGUF tokenizer.ggml.pre).
  std::vector<std::pair<std::string, std::string>> merges;
  std::string pre;
  std::vector<std::string> pre_regexes;
  // BPE: a word that is itself a token is emitted whole (Llama 3's ignore_merges).
  // Unset: decided from `pre` as llama.cpp does.
  std::optional<bool> ignore_merges;

  std::optional<int32_t> bos_id, eos_id, eot_id, eom_id, unk_id, pad_id;
  std::optional<bool> add_bos, add_eos;  // unset: per-kind defaults (SPM adds BOS, BPE does not)
  std::optional<bool> add_space_prefix;  // SPM: prepend a space to the text (default true)
  // SPM, the rules of tokenizer.json's Metaspace pre-tokenizer: no space is
  // put before a text segment (the text between special tokens) that already
  // starts with one, and with prepend_scheme "first" only the segment at the
  // very start of the text gets one. GGUF files and the legacy Prepend
  // normalizer put it before every segment, whatever it starts with.
  bool space_prefix_unless_space = false;
  bool space_prefix_first_segment_only = false;
  // SPM, a Metaspace that splits: the text is cut before every U+2581 and
  // each piece encoded alone (no piece then joins across a space).
  bool split_at_space_marks = false;

  std::string chat_template;  // tokenizer.chat_template, "" if none
};

}  // namespace tessera::tok
