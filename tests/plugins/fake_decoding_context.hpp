// A DecodingContext without an engine: logits, tokens and settings set by the
// test, the generator seeded from the settings as the engine does.
#pragma once

#include <random>
#include <span>
#include <vector>

#include "tessera/decoding.hpp"

namespace tessera::test {

class FakeDecodingContext final : public DecodingContext {
 public:
  FakeDecodingContext(std::vector<float> logits, std::vector<int32_t> tokens, SamplingSettings settings,
                      int32_t prompt_length = 0)
      : logits_(std::move(logits)),
        tokens_(std::move(tokens)),
        prompt_length_(prompt_length),
        settings_(settings),
        rng_(settings.seed) {}

  std::span<float> logits() noexcept override { return logits_; }
  std::span<const int32_t> tokens() const noexcept override { return tokens_; }
  int32_t prompt_length() const noexcept override { return prompt_length_; }
  const SamplingSettings& sampling() const noexcept override { return settings_; }
  std::mt19937_64& rng() noexcept override { return rng_; }

  // Test hooks.
  std::vector<float>& logit_storage() { return logits_; }
  SamplingSettings& settings() { return settings_; }

 private:
  std::vector<float> logits_;    // [vocab_size]
  std::vector<int32_t> tokens_;  // prompt + generated
  int32_t prompt_length_;
  SamplingSettings settings_;
  std::mt19937_64 rng_;
};

}  // namespace tessera::test
