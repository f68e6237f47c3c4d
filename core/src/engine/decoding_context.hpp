// decoding_context.hpp: the DecodingContext one request gives its strategy.
#pragma once

#include <random>
#include <span>
#include <vector>

#include "tessera/decoding.hpp"

namespace tessera {

class RequestDecodingContext final : public DecodingContext {
 public:
  // `prompt_length` (when not -1): how many of `prompt`'s tokens are the
  // user's prompt, the rest having been generated (a draft's view of a request).
  RequestDecodingContext(std::span<const int32_t> prompt, const SamplingSettings& sampling,
                         int32_t prompt_length = -1)
      : tokens_(prompt.begin(), prompt.end()), committed_(prompt.size()),
        prompt_length_(prompt_length >= 0 ? prompt_length : static_cast<int32_t>(prompt.size())),
        sampling_(sampling), rng_(sampling.seed) {}

  std::span<const int32_t> proposed() const noexcept override {
    return std::span<const int32_t>(tokens_).subspan(committed_);
  }
  std::span<float> logits(size_t row) noexcept override {
    const size_t vocab = rows_.size() / (proposed().size() + 1);
    if (vocab == 0 || row > proposed().size()) return {};
    return rows_.subspan(row * vocab, vocab);
  }
  std::span<const int32_t> tokens() const noexcept override {
    return std::span<const int32_t>(tokens_).first(committed_);
  }
  int32_t prompt_length() const noexcept override { return prompt_length_; }
  const SamplingSettings& sampling() const noexcept override { return sampling_; }
  std::mt19937_64& rng() noexcept override { return rng_; }

  // Committed tokens followed by the proposed ones, as the model reads them.
  std::span<const int32_t> tokens_and_proposed() const { return tokens_; }
  // Appends a token to the committed ones (the proposal must be cleared first).
  void push(int32_t token) { tokens_.push_back(token), ++committed_; }
  // Draft tokens to verify in the next step; they replace any earlier proposal.
  // `probs`: [draft.size(), vocab], the distribution each draft was drawn
  // from, or empty when the drafts are certain (greedy drafting, lookup).
  void propose(std::span<const int32_t> draft, std::span<const float> probs = {}) {
    tokens_.resize(committed_);
    tokens_.insert(tokens_.end(), draft.begin(), draft.end());
    proposal_probs_.assign(probs.begin(), probs.end());
  }
  void clear_proposal() {
    tokens_.resize(committed_);
    proposal_probs_.clear();
  }
  // What propose() was given as `probs`.
  std::span<const float> proposal_probs() const { return proposal_probs_; }
  // The step's rows of logits: [proposed().size() + 1, vocab].
  void set_logits(std::span<float> rows) { rows_ = rows; }

 private:
  std::vector<int32_t> tokens_;  // prompt, generated, then proposed
  size_t committed_;             // prompt + generated
  int32_t prompt_length_;
  SamplingSettings sampling_;
  std::mt19937_64 rng_;
  std::span<float> rows_;
  std::vector<float> proposal_probs_;  // [proposed().size(), vocab] or empty
};

}  // namespace tessera
