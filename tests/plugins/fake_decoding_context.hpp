// A DecodingContext without an engine: logits, tokens and settings set by the
// test, the generator seeded from the settings as the engine does. With
// proposed tokens (verification), logits hold one row per proposed token plus one.
#pragma once

#include <random>
#include <span>
#include <vector>

#include "tessera/decoding.hpp"

namespace tessera::test {

class FakeDecodingContext final : public DecodingContext {
 public:
  FakeDecodingContext(std::vector<float> logits, std::vector<int32_t> tokens, SamplingSettings settings,
                      int32_t prompt_length = 0, std::vector<int32_t> proposed = {})
      : logits_(std::move(logits)),
        tokens_(std::move(tokens)),
        committed_(tokens_.size()),
        prompt_length_(prompt_length),
        settings_(settings),
        rng_(settings.seed) {
    tokens_.insert(tokens_.end(), proposed.begin(), proposed.end());
  }

  std::span<const int32_t> proposed() const noexcept override {
    return std::span<const int32_t>(tokens_).subspan(committed_);
  }
  std::span<float> logits(size_t row) noexcept override {
    const size_t vocab = logits_.size() / (proposed().size() + 1);
    if (row > proposed().size()) return {};
    return std::span<float>(logits_).subspan(row * vocab, vocab);
  }
  std::span<const int32_t> tokens() const noexcept override {
    return std::span<const int32_t>(tokens_).first(committed_);
  }
  int32_t prompt_length() const noexcept override { return prompt_length_; }
  const SamplingSettings& sampling() const noexcept override { return settings_; }
  std::mt19937_64& rng() noexcept override { return rng_; }

  // Test hooks.
  std::vector<float>& logit_storage() { return logits_; }
  SamplingSettings& settings() { return settings_; }

 private:
  std::vector<float> logits_;    // [proposed + 1, vocab_size]
  std::vector<int32_t> tokens_;  // prompt + generated, then proposed
  size_t committed_;             // prompt + generated
  int32_t prompt_length_;
  SamplingSettings settings_;
  std::mt19937_64 rng_;
};

}  // namespace tessera::test
