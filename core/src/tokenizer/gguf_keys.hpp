// tokenizer/gguf_keys.hpp: a tokenizer written as GGUF metadata
// (tokenizer.ggml.*), the inverse of gguf_loader.hpp, for `tessera convert`
// and `tessera quantize` of a Hugging Face folder.
#pragma once

#include <cstdint>
#include <string>

#include "model/gguf_writer.hpp"
#include "tessera/status.hpp"
#include "tokenizer/tokenizer_spec.hpp"

namespace tessera::tok {

// The tokenizer.ggml.pre name whose split rules are `spec`'s: the spec's own
// `pre` when it has one, else the first GGUF name whose regexes
// (pre_tokenizer_regexes) are exactly spec.pre_regexes. Unsupported when no
// name splits text the same way (and emits words that are tokens whole, Llama
// 3's ignore_merges, or not, as the spec does), since llama.cpp and Tessera
// choose the rules of a GGUF file by that name alone.
Result<std::string> gguf_pre_tokenizer_name(const TokenizerSpec& spec);

// Sets tokenizer.ggml.{model, pre, tokens, token_type, merges, the special
// ids, add_bos_token, add_eos_token} and tokenizer.chat_template as
// llama.cpp's converter writes them for a byte-level BPE ("gpt2") tokenizer,
// added tokens that look like control tokens ("<|...|>") typed control as that
// converter types them, the token list padded with unused "[PAD<id>]" tokens to `vocab_rows`, the
// embedding's rows (GGUF readers take the list's length as the vocabulary).
// Unsupported for a SentencePiece spec (its scores and normalization rules
// from tokenizer.json have no exact GGUF form here) and for split rules no
// GGUF name gives, or added tokens that strip the whitespace beside them (GGUF
// has no key for it).
Status write_gguf_tokenizer(const TokenizerSpec& spec, int64_t vocab_rows, GgufWriter& writer);

}  // namespace tessera::tok
