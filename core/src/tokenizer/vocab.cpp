#include "tokenizer/vocab.hpp"

namespace tessera::tok {
namespace {

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

std::string shorten(std::string_view s) {
  return s.size() <= 40 ? std::string(s) : std::string(s.substr(0, 40)) + "...";
}

}  // namespace

Result<Vocab> Vocab::build(const TokenizerSpec& spec) {
  if (spec.tokens.empty()) {
    return InvalidArgument(spec.source + ": the tokenizer vocabulary is empty");
  }
  if (spec.tokens.size() > static_cast<size_t>(INT32_MAX)) {
    return InvalidArgument(spec.source + ": the tokenizer vocabulary has more tokens than int32 ids allow");
  }
  Vocab v;
  v.tokens_ = spec.tokens;
  v.text_to_id_.reserve(v.tokens_.size());
  for (size_t i = 0; i < v.tokens_.size(); ++i) {
    // Later duplicates overwrite earlier ones, as llama.cpp's token_to_id map does.
    v.text_to_id_[v.tokens_[i].text] = static_cast<int32_t>(i);
  }
  v.merges_.reserve(spec.merges.size());
  for (size_t rank = 0; rank < spec.merges.size(); ++rank) {
    const auto& [a, b] = spec.merges[rank];
    const auto left = v.find(a);
    const auto right = v.find(b);
    const auto merged = v.find(a + b);
    if (!left || !right || !merged) {
      const std::string& missing = !left ? a : !right ? b : a + b;
      return InvalidArgument(spec.source + ": merge " + std::to_string(rank) + " ('" + shorten(a) + "' + '" +
                             shorten(b) + "') names '" + shorten(missing) + "', which is not in the vocabulary");
    }
    // The first (lowest-rank) occurrence of a pair wins.
    v.merges_.try_emplace(pair_key(*left, *right), MergeResult{static_cast<int32_t>(rank), *merged});
  }
  return v;
}

std::optional<int32_t> Vocab::find(std::string_view text) const {
  const auto it = text_to_id_.find(text);
  if (it == text_to_id_.end()) return std::nullopt;
  return it->second;
}

std::optional<MergeResult> Vocab::merge(int32_t left, int32_t right) const {
  const auto it = merges_.find(pair_key(left, right));
  if (it == merges_.end()) return std::nullopt;
  return it->second;
}

}  // namespace tessera::tok
