#include "engine/prompt_lookup.hpp"

#include <algorithm>

namespace tessera {

void lookup_continuation(std::span<const int32_t> tokens, const PromptLookupSettings& settings,
                         int32_t max_tokens, std::vector<int32_t>& out) {
  const auto n_tokens = static_cast<int64_t>(tokens.size());
  if (max_tokens <= 0 || settings.min_ngram < 1) return;
  for (int64_t n = std::min<int64_t>(settings.max_ngram, n_tokens - 1); n >= settings.min_ngram; --n) {
    const std::span<const int32_t> suffix = tokens.last(static_cast<size_t>(n));
    // The most recent occurrence first: nearby text predicts best. An
    // occurrence must end before the suffix does, so something follows it.
    for (int64_t start = n_tokens - n - 1; start >= 0; --start) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + start)) continue;
      const int64_t follows = start + n;
      const int64_t take = std::min<int64_t>(max_tokens, n_tokens - follows);
      out.insert(out.end(), tokens.begin() + follows, tokens.begin() + follows + take);
      return;
    }
  }
}

}  // namespace tessera
