// Argmax over logits, shared by the greedy strategy and the sampling strategy's
// temperature-0 path so that both pick the same token.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <string>

#include "tessera/status.hpp"

namespace tessera::plugins {

// The id of the largest logit. Ties go to the lowest id, so the choice does not
// depend on how a kernel happened to order equal values. NaN is an error (it
// would otherwise never win and silently hide a broken forward pass).
inline Result<int32_t> argmax_token(std::span<const float> logits) {
  if (logits.empty()) return Status(InvalidArgument("decoding: the logits are empty (vocab_size 0)"));
  int32_t best = -1;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (std::isnan(logits[i])) {
      return Status(CorruptData("decoding: logit " + std::to_string(i) + " is NaN"));
    }
    if (best < 0 || logits[i] > logits[static_cast<size_t>(best)]) best = static_cast<int32_t>(i);
  }
  return best;
}

}  // namespace tessera::plugins
