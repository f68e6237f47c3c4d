// Sampling: draws the next token from the model's distribution as shaped by
// the request's SamplingSettings (repetition penalty, temperature, top-k,
// top-p, min-p; order in sampling_filters.hpp), with the request's generator,
// so a fixed seed gives the same text run to run.
#pragma once

#include "tessera/decoding.hpp"
#include "tessera/params.hpp"

namespace tessera::plugins {

class SamplingStrategy final : public DecodingStrategy {
 public:
  explicit SamplingStrategy(const ParamValues& /*params: none; settings come per request*/) {}
  Status step(DecodingContext& ctx, std::vector<int32_t>& out) noexcept override;
  // The distribution step() draws from: the shaped candidates' probabilities,
  // zero elsewhere; a point mass on the argmax at temperature 0.
  Status distribution(DecodingContext& ctx, std::span<float> probs) noexcept override;
};

// Settings outside their domain (negative temperature, top_p of 0, ...) are a
// clear error rather than a silently different distribution.
Status check_sampling_settings(const SamplingSettings& s);

}  // namespace tessera::plugins
