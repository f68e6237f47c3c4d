// Greedy decoding: always the most likely next token (argmax of the logits;
// ties go to the lowest token id). Ignores the sampling settings.
#pragma once

#include "tessera/decoding.hpp"
#include "tessera/params.hpp"

namespace tessera::plugins {

class GreedyStrategy final : public DecodingStrategy {
 public:
  explicit GreedyStrategy(const ParamValues& /*params: none*/) {}
  Status step(DecodingContext& ctx, std::vector<int32_t>& out) noexcept override;
  // A point mass on the argmax.
  Status distribution(DecodingContext& ctx, std::span<float> probs) noexcept override;
};

}  // namespace tessera::plugins
