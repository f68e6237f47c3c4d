// prompt_lookup.hpp: draft tokens found in the request's own text (prompt
// lookup decoding, Saxena 2023; llama.cpp's llama-lookup): when the last n
// tokens occurred before, what followed them then is proposed to follow them
// now. Free to compute, and often right where the output quotes or edits its
// input (code, summaries, a prompt that repeats itself).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tessera {

struct PromptLookupSettings {
  int32_t min_ngram = 2;  // shortest suffix worth matching (1 matches too eagerly on prose)
  int32_t max_ngram = 4;  // longest suffix tried first
};

// Appends at most `max_tokens` tokens to `out`: the continuation of the most
// recent earlier occurrence of the longest suffix of `tokens` (of max_ngram
// down to min_ngram tokens) that occurred before. Appends nothing when no
// suffix recurs. O(tokens.size() * max_ngram).
void lookup_continuation(std::span<const int32_t> tokens, const PromptLookupSettings& settings,
                         int32_t max_tokens, std::vector<int32_t>& out);

}  // namespace tessera
