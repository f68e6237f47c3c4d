#include "sampling_strategy.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "sampling_filters.hpp"
#include "tessera/argmax.hpp"

namespace tessera::plugins {
namespace {

std::string num(double x) { return std::to_string(x); }

}  // namespace

Status check_sampling_settings(const SamplingSettings& s) {
  if (!(s.temperature >= 0.0) || !std::isfinite(s.temperature)) {
    return InvalidArgument("sampling: temperature must be >= 0 (0 = greedy), got " + num(s.temperature));
  }
  if (s.top_k < 0) return InvalidArgument("sampling: top_k must be >= 0 (0 = off), got " + std::to_string(s.top_k));
  if (!(s.top_p > 0.0 && s.top_p <= 1.0)) {
    return InvalidArgument("sampling: top_p must be in (0, 1] (1 = off), got " + num(s.top_p));
  }
  if (!(s.min_p >= 0.0 && s.min_p <= 1.0)) {
    return InvalidArgument("sampling: min_p must be in [0, 1] (0 = off), got " + num(s.min_p));
  }
  if (!(s.repetition_penalty > 0.0) || !std::isfinite(s.repetition_penalty)) {
    return InvalidArgument("sampling: repetition_penalty must be > 0 (1 = off), got " + num(s.repetition_penalty));
  }
  if (s.repeat_last_n < -1) {
    return InvalidArgument("sampling: repeat_last_n must be >= -1 (-1 = whole context), got " +
                           std::to_string(s.repeat_last_n));
  }
  return Status::Ok();
}

namespace {

// The logits of ctx's row 0 turned into what the request samples from: the
// candidates with their probabilities (sampling_filters.hpp's steps 1-5), or,
// at temperature 0, the one candidate of the penalized argmax.
Result<std::vector<sampling::Candidate>> shaped_candidates(DecodingContext& ctx) {
  const SamplingSettings& settings = ctx.sampling();
  TESSERA_RETURN_IF_ERROR(check_sampling_settings(settings));

  // Work on a copy: [vocab_size]. NaN and +inf would poison the softmax;
  // -inf is a legitimate mask and is simply never a candidate.
  const std::span<const float> raw = ctx.logits();
  if (raw.empty()) return InvalidArgument("sampling: the logits are empty (vocab_size 0)");
  std::vector<float> logits(raw.begin(), raw.end());
  bool any_finite = false;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (std::isnan(logits[i]) || logits[i] == std::numeric_limits<float>::infinity()) {
      return CorruptData("sampling: logit " + std::to_string(i) + " is " + (std::isnan(logits[i]) ? "NaN" : "+inf"));
    }
    any_finite = any_finite || std::isfinite(logits[i]);
  }
  if (!any_finite) return InvalidArgument("sampling: every logit is -inf; no token can be chosen");

  TESSERA_RETURN_IF_ERROR(sampling::apply_repetition_penalty(
      logits, sampling::penalty_window(ctx.tokens(), settings.repeat_last_n), settings.repetition_penalty));

  if (settings.temperature == 0.0) {
    Result<int32_t> token = argmax_token(logits);
    if (!token.ok()) return token.status();
    return std::vector<sampling::Candidate>{{*token, logits[static_cast<size_t>(*token)], 1.0}};
  }
  std::vector<sampling::Candidate> candidates = sampling::top_k_candidates(logits, settings.top_k);
  sampling::softmax(candidates, settings.temperature);
  sampling::keep_top_p(candidates, settings.top_p);
  sampling::keep_min_p(candidates, settings.min_p);
  return candidates;
}

}  // namespace

Status SamplingStrategy::step(DecodingContext& ctx, std::vector<int32_t>& out) noexcept {
  return guard([&]() -> Status {
    auto candidates = shaped_candidates(ctx);
    if (!candidates.ok()) return candidates.status();
    // Temperature 0 takes the argmax and consumes no random number.
    const bool greedy = ctx.sampling().temperature == 0.0;
    out.push_back(greedy ? candidates->front().id : sampling::draw(*candidates, ctx.rng()));
    return Status::Ok();
  });
}

Status SamplingStrategy::distribution(DecodingContext& ctx, std::span<float> probs) noexcept {
  return guard([&]() -> Status {
    auto candidates = shaped_candidates(ctx);
    if (!candidates.ok()) return candidates.status();
    if (probs.size() != ctx.logits().size())
      return InvalidArgument("sampling: distribution() needs " + std::to_string(ctx.logits().size()) +
                             " probabilities, got room for " + std::to_string(probs.size()));
    std::fill(probs.begin(), probs.end(), 0.0f);
    for (const sampling::Candidate& c : *candidates) probs[static_cast<size_t>(c.id)] = static_cast<float>(c.prob);
    return Status::Ok();
  });
}

}  // namespace tessera::plugins
