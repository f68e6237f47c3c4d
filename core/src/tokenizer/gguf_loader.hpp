// tokenizer/gguf_loader.hpp: a tokenizer from GGUF metadata (tokenizer.ggml.*).
#pragma once

#include "model/gguf.hpp"
#include "tessera/status.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/tokenizer_spec.hpp"

namespace tessera::tok {

// Reads tokenizer.ggml.{model, pre, tokens, scores, token_type, merges,
// bos/eos/eot/eom/unknown/padding_token_id, add_bos_token, add_eos_token,
// add_space_prefix} and tokenizer.chat_template. Supported models: "llama"
// (SentencePiece) and "gpt2" (byte-level BPE); anything else is an
// unsupported error naming the model and the file.
Result<TokenizerSpec> tokenizer_spec_from_gguf(const GgufFile& file);
Result<Tokenizer> tokenizer_from_gguf(const GgufFile& file);

}  // namespace tessera::tok
