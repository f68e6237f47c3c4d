// tokenizer/spm_encoder.hpp: SentencePiece-style encoding of one text fragment.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.hpp"

namespace tessera::tok {

// Encodes `text` (spaces already replaced by U+2581) the way llama.cpp's SPM
// tokenizer does: start from single characters, repeatedly merge the adjacent
// pair whose concatenation is the vocabulary token with the highest score
// (leftmost on ties), then emit each piece; characters that are not tokens
// become their <0xNN> byte tokens, else `unk_id`, else are dropped.
void spm_encode(const Vocab& vocab, std::string_view text, std::optional<int32_t> unk_id, std::vector<int32_t>& out);

// Id of the byte-fallback token <0xNN> for `byte`, else the one-character token.
std::optional<int32_t> spm_byte_token(const Vocab& vocab, uint8_t byte);

}  // namespace tessera::tok
