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
// exactly (tessera/decoding.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "engine/session.hpp"

namespace tessera {

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
  // tokens (the per-token cost; not a prompt's prefill).
  Status draft(size_t request, std::span<const int32_t> tokens, int32_t max_tokens, std::vector<int32_t>& out,
               std::vector<double>& forward_ms);

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

  std::unique_ptr<Session> session_;
  double min_probability_;
  std::map<size_t, DraftSequence> sequences_;
  std::vector<float> logits_;  // [vocab]
};

}  // namespace tessera
