// tokenizer/vocab.hpp: the validated, indexed vocabulary shared by the encoders.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tessera/status.hpp"
#include "tokenizer/tokenizer_spec.hpp"

namespace tessera::tok {

struct MergeResult {
  int32_t rank;    // lower merges first
  int32_t result;  // id of the merged token
};

class Vocab {
 public:
  // Indexes `spec` (tokens and merges). Errors name spec.source and the bad
  // entry: an empty vocabulary, a merge whose parts or result are not tokens.
  // A text that appears twice maps to its last id, as in llama.cpp.
  static Result<Vocab> build(const TokenizerSpec& spec);

  int32_t size() const { return static_cast<int32_t>(tokens_.size()); }
  const SpecToken& token(int32_t id) const { return tokens_[static_cast<size_t>(id)]; }
  std::optional<int32_t> find(std::string_view text) const;
  // Merge of the adjacent tokens (left, right), if the vocabulary has one.
  std::optional<MergeResult> merge(int32_t left, int32_t right) const;
  bool has_merges() const { return !merges_.empty(); }

 private:
  struct StrHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::vector<SpecToken> tokens_;
  std::unordered_map<std::string, int32_t, StrHash, std::equal_to<>> text_to_id_;
  std::unordered_map<uint64_t, MergeResult> merges_;  // key: left id << 32 | right id
};

}  // namespace tessera::tok
