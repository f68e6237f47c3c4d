#include "sampling_filters.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace tessera::plugins::sampling {
namespace {

// High logit first; equal logits by lower id, so the order is total and deterministic.
bool better(const Candidate& a, const Candidate& b) {
  return a.logit != b.logit ? a.logit > b.logit : a.id < b.id;
}

void renormalize(std::vector<Candidate>& candidates) {
  double total = 0.0;
  for (const Candidate& c : candidates) total += c.prob;
  for (Candidate& c : candidates) c.prob /= total;
}

}  // namespace

Status apply_repetition_penalty(std::span<float> logits, std::span<const int32_t> recent, double penalty) {
  if (penalty == 1.0 || recent.empty()) return Status::Ok();
  std::vector<bool> seen(logits.size(), false);
  for (int32_t token : recent) {
    if (token < 0 || static_cast<size_t>(token) >= logits.size()) {
      return InvalidArgument("sampling: token " + std::to_string(token) + " in the context is outside the vocabulary of " +
                             std::to_string(logits.size()));
    }
    if (seen[static_cast<size_t>(token)]) continue;  // each distinct token once
    seen[static_cast<size_t>(token)] = true;
    float& logit = logits[static_cast<size_t>(token)];
    logit = logit > 0.0f ? static_cast<float>(logit / penalty) : static_cast<float>(logit * penalty);
  }
  return Status::Ok();
}

std::span<const int32_t> penalty_window(std::span<const int32_t> tokens, int64_t repeat_last_n) {
  if (repeat_last_n < 0 || static_cast<uint64_t>(repeat_last_n) >= tokens.size()) return tokens;
  return tokens.last(static_cast<size_t>(repeat_last_n));
}

std::vector<Candidate> top_k_candidates(std::span<const float> logits, int64_t top_k) {
  std::vector<Candidate> candidates;
  candidates.reserve(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] == -std::numeric_limits<float>::infinity()) continue;  // masked out by the model or a grammar
    candidates.push_back({static_cast<int32_t>(i), static_cast<double>(logits[i])});
  }
  if (top_k > 0 && static_cast<uint64_t>(top_k) < candidates.size()) {
    const auto keep = candidates.begin() + top_k;
    std::partial_sort(candidates.begin(), keep, candidates.end(), better);
    candidates.erase(keep, candidates.end());
  } else {
    std::sort(candidates.begin(), candidates.end(), better);
  }
  return candidates;
}

void softmax(std::vector<Candidate>& candidates, double temperature) {
  if (candidates.empty()) return;
  double max_logit = candidates.front().logit;
  for (const Candidate& c : candidates) max_logit = std::max(max_logit, c.logit);
  for (Candidate& c : candidates) c.prob = std::exp((c.logit - max_logit) / temperature);
  renormalize(candidates);
}

void keep_top_p(std::vector<Candidate>& candidates, double top_p) {
  if (top_p >= 1.0 || candidates.empty()) return;
  double cumulative = 0.0;
  size_t keep = 0;
  while (keep < candidates.size()) {
    cumulative += candidates[keep].prob;
    ++keep;
    if (cumulative >= top_p) break;
  }
  candidates.resize(keep);
  renormalize(candidates);
}

void keep_min_p(std::vector<Candidate>& candidates, double min_p) {
  if (min_p <= 0.0 || candidates.empty()) return;
  double max_prob = 0.0;
  for (const Candidate& c : candidates) max_prob = std::max(max_prob, c.prob);
  const double threshold = min_p * max_prob;
  // Sorted by logit, so by probability: the survivors are a prefix.
  size_t keep = 1;
  while (keep < candidates.size() && candidates[keep].prob >= threshold) ++keep;
  candidates.resize(keep);
  renormalize(candidates);
}

double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

int32_t draw(const std::vector<Candidate>& candidates, std::mt19937_64& rng) {
  const double u = uniform01(rng);
  double cumulative = 0.0;
  for (const Candidate& c : candidates) {
    cumulative += c.prob;
    if (u < cumulative) return c.id;
  }
  return candidates.back().id;  // u within rounding of 1
}

}  // namespace tessera::plugins::sampling
