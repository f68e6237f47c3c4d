// tokenizer/bpe_encoder.hpp: byte-level BPE (GPT-2 style) for one pre-tokenized word.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.hpp"

namespace tessera::tok {

// Encodes `word` (already in byte-level spelling, see byte_level.hpp) by
// repeatedly merging the adjacent pair with the lowest merge rank (leftmost on
// ties), and appends the resulting ids to `out`. With `ignore_merges`, a word
// that is itself a token is emitted whole. Characters that are not tokens fall
// back to the tokens of their single bytes, or are dropped, as llama.cpp does.
void bpe_encode_word(const Vocab& vocab, std::string_view word, bool ignore_merges, std::vector<int32_t>& out);

}  // namespace tessera::tok
