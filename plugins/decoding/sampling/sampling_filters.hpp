// The steps of sampling, each a plain function so tests can check them one by one.
//
// The strategy applies them in this order (see sampling_strategy.cpp):
//   1. repetition penalty on the raw logits (CTRL rule)
//   2. temperature (0 = argmax of the penalized logits, nothing below runs)
//   3. top-k            on the tempered logits (same set as on the raw ones)
//   4. top-p (nucleus)  on the probabilities renormalized over the top-k survivors
//   5. min-p            relative to the largest surviving probability
//   6. one draw from the survivors, renormalized
// Candidates are kept sorted by logit, high to low, ties by lower token id, so
// every cut is a prefix and the result does not depend on sort stability.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "tessera/status.hpp"

namespace tessera::plugins::sampling {

struct Candidate {
  int32_t id;
  double logit;
  double prob = 0.0;  // filled by softmax(); renormalized by every cut
};

// CTRL (Keskar et al. 2019): each distinct token of `recent` has its logit
// divided by `penalty` if positive, multiplied by it otherwise, so a penalty
// > 1 always makes a repeat less likely. Tokens outside [0, logits.size()) are
// an error (they would mean the context and the model disagree on the vocabulary).
Status apply_repetition_penalty(std::span<float> logits, std::span<const int32_t> recent, double penalty);

// The tokens the penalty looks at: the last `repeat_last_n` of `tokens`
// (all of them when repeat_last_n < 0, none when it is 0).
std::span<const int32_t> penalty_window(std::span<const int32_t> tokens, int64_t repeat_last_n);

// Every token whose logit is not -inf, sorted high to low; when 0 < top_k <
// count, only the top_k best are kept. (A positive temperature does not change
// the order, so top-k may run before the temperature is applied in softmax.)
std::vector<Candidate> top_k_candidates(std::span<const float> logits, int64_t top_k);

// prob = softmax(logit / temperature) over the candidates, temperature > 0,
// computed as exp((logit - max) / temperature) in double so that a tiny
// temperature cannot overflow: it tends to the argmax instead.
void softmax(std::vector<Candidate>& candidates, double temperature);

// Keeps the shortest prefix whose probability reaches top_p (at least one
// token), then renormalizes. top_p >= 1 keeps everything.
void keep_top_p(std::vector<Candidate>& candidates, double top_p);

// Keeps tokens with prob >= min_p * (largest prob), then renormalizes. min_p <= 0 keeps everything.
void keep_min_p(std::vector<Candidate>& candidates, double min_p);

// A uniform double in [0, 1) from the top 53 bits of one generator output:
// the same on every platform, unlike std::uniform_real_distribution.
double uniform01(std::mt19937_64& rng);

// One token drawn with the candidates' probabilities (which sum to 1).
int32_t draw(const std::vector<Candidate>& candidates, std::mt19937_64& rng);

}  // namespace tessera::plugins::sampling
