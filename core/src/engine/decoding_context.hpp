// decoding_context.hpp: the DecodingContext one request gives its strategy.
#pragma once

#include <random>
#include <span>
#include <vector>

#include "tessera/decoding.hpp"

namespace tessera {

class RequestDecodingContext final : public DecodingContext {
 public:
  // `logits` [vocab] is pointed at the request's row before each step.
  RequestDecodingContext(std::span<float> logits, std::span<const int32_t> prompt, const SamplingSettings& sampling)
      : logits_(logits), tokens_(prompt.begin(), prompt.end()), prompt_length_(static_cast<int32_t>(prompt.size())),
        sampling_(sampling), rng_(sampling.seed) {}

  std::span<float> logits() noexcept override { return logits_; }
  std::span<const int32_t> tokens() const noexcept override { return tokens_; }
  int32_t prompt_length() const noexcept override { return prompt_length_; }
  const SamplingSettings& sampling() const noexcept override { return sampling_; }
  std::mt19937_64& rng() noexcept override { return rng_; }

  void push(int32_t token) { tokens_.push_back(token); }
  void set_logits(std::span<float> logits) { logits_ = logits; }

 private:
  std::span<float> logits_;
  std::vector<int32_t> tokens_;  // prompt, then generated
  int32_t prompt_length_;
  SamplingSettings sampling_;
  std::mt19937_64 rng_;
};

}  // namespace tessera
