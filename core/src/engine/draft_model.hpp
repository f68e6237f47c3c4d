// draft_model.hpp: a second, smaller model that drafts tokens for the target
// to verify (speculative decoding, Leviathan et al. 2023; Chen et al. 2023).
//
// The draft runs in its own Session: its own file, quant plugins, memory and
// attention kernel. Each request being drafted for has a sequence in the
// draft's memory that follows the request's tokens: before drafting, the
// sequence is cut back to what it shares with them (rejected drafts go) and
// the tokens it lacks are fed in one forward; then it proposes its most
// likely token, one forward per token, until it has enough or is unsure.
// Greedy proposals are point masses, so any decoding strategy verifies them
// exactly (tessera/decoding.hpp). With DraftSampling, each proposal is drawn
// instead from the request's own strategy's distribution on the draft's
// logits (for a sampling strategy: the draft's logits through the same
// temperature, top-k, top-p and penalties), q kept for the verification's
// rejection sampling: a sampled target keeps more of such drafts than of
// greedy ones (it keeps x with probability min(1, p(x)/q(x)), so sum_x
// min(p, q) of them, against p(argmax q) for a greedy draft).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "engine/session.hpp"
#include "tessera/decoding.hpp"

namespace tessera {

// How a request's drafts are drawn when its strategy samples.
struct DraftSampling {
  DecodingStrategy* strategy = nullptr;     // the request's; asked for distribution() (ABI 3.1)
  const SamplingSettings* settings = nullptr;  // the request's
  std::mt19937_64* rng = nullptr;           // the request's generator
  size_t row_width = 0;                     // the target's logits row: the width of each q row
  int32_t prompt_length = 0;                // of the request, for the strategy's context
};

class DraftModel {
 public:
  // `min_probability` (p_min): stop drafting when the draft's most likely
  // token has a smaller probability (as llama.cpp's --draft-p-min).
  DraftModel(std::unique_ptr<Session> session, double min_probability);
  ~DraftModel();

  // Checks that the draft and the target tokenize alike: the same tokens at
  // the same ids, the same special ids. Error: how they differ.
  static Status check_vocabularies(const tok::Tokenizer& target, const tok::Tokenizer& draft);

  // Appends at most `max_tokens` drafts to follow `tokens` to `out`, for the
  // request numbered `request` (its draft sequence is kept between calls).
  // `forward_ms` receives the time of each draft forward of one or two
  // tokens (the per-token cost; not a prompt's prefill). With `sampling`,
  // the drafts are drawn from the strategy's distribution and `probs`
  // receives it, [out.size(), row_width]; it stays empty where every
  // distribution was a point mass (a greedy strategy) or the strategy
  // offers none, the drafts then being the draft's most likely tokens.
  Status draft(size_t request, std::span<const int32_t> tokens, int32_t max_tokens, std::vector<int32_t>& out,
               std::vector<double>& forward_ms, const DraftSampling* sampling = nullptr,
               std::vector<float>* probs = nullptr);

  // The request ended: its draft sequence goes.
  void forget(size_t request);

  Session& session() { return *session_; }

 private:
  struct DraftSequence {
    SeqId seq = -1;
    std::vector<int32_t> fed;  // tokens whose state the draft's memory holds
  };
  // The probability of the largest logit, under a softmax of `logits`.
  static double top_probability(std::span<const float> logits, int32_t top);
  // Draws the next draft from the strategy's distribution on logits_ after
  // `history`; appends q to `probs` and says whether q was spread. Returns
  // -1 where the strategy offers no distribution, -2 where q has no mass on
  // an id the draft may propose (drafting then stops: any stopping rule
  // keeps the verification exact).
  Result<int32_t> sample(const DraftSampling& sampling, std::span<const int32_t> history, std::vector<float>& probs,
                         bool& spread);

  std::unique_ptr<Session> session_;
  double min_probability_;
  std::map<size_t, DraftSequence> sequences_;
  std::vector<float> logits_;  // [vocab]
  std::vector<float> scratch_, q_;  // [vocab]: the logits a strategy may rewrite, its distribution
  std::vector<double> weights_;     // [vocab]
};

}  // namespace tessera
