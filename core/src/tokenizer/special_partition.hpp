// tokenizer/special_partition.hpp: cut text at special tokens before pre-tokenization.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.hpp"

namespace tessera::tok {

// A stretch of the input: either raw text still to be encoded or one special token.
struct Fragment {
  int32_t token = -1;     // >= 0: a special token; -1: raw text
  std::string_view text;  // raw text (empty for tokens)
};

// Splits `text` at every occurrence of the candidate tokens, longest texts
// first (as llama.cpp does: each token splits all remaining raw fragments).
// `specials` must be sorted by text length, longest first. A token with
// lstrip/rstrip swallows ASCII whitespace next to it.
std::vector<Fragment> partition_special(std::string_view text, const Vocab& vocab,
                                        const std::vector<int32_t>& specials);

}  // namespace tessera::tok
