// draft_vocabulary.hpp: the vocabulary ids a speculative draft's output head
// keeps ([speculative] draft_vocabulary): the `size` tokens a text uses most
// (FR-Spec, Zhao et al. 2025: a draft's proposals come almost all from them),
// and every control or added token (an end of turn must stay proposable).
// Where the text holds fewer distinct tokens, the rest are the vocabulary's
// first ids: a BPE vocabulary lists its tokens in the order their merges were
// learned, the most frequent pairs first.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

#include "tessera/status.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera {

// Ascending, unique ids: the `size` ids that `text` (tokenized as plain text,
// no BOS) holds most often, ties (those it does not hold among them) to the
// smaller id, and the control and added tokens; all of them when `size`
// reaches the vocabulary.
std::vector<int32_t> most_used_tokens(const tok::Tokenizer& tokenizer, std::string_view text, int64_t size);

// The same for the text in file `path`. Error: a file that cannot be read.
Result<std::vector<int32_t>> most_used_tokens_in_file(const tok::Tokenizer& tokenizer,
                                                      const std::filesystem::path& path, int64_t size);

}  // namespace tessera
