#include "engine/draft_verification.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace tessera {

double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

int32_t draw_index(std::span<const double> w, double total, std::mt19937_64& rng) {
  const double u = uniform01(rng) * total;
  double cumulative = 0.0;
  int32_t last = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    if (w[i] <= 0.0) continue;
    cumulative += w[i];
    last = static_cast<int32_t>(i);
    if (u < cumulative) return last;
  }
  return last;  // u within rounding of the total
}

Status verify_draft(DecodingStrategy& strategy, DecodingContext& ctx, std::span<const float> draft_probs,
                    std::vector<int32_t>& out) {
  const auto proposed = ctx.proposed();
  const size_t k = proposed.size();
  if (draft_probs.empty() || !provides(strategy, 1)) return strategy.verify(ctx, out);

  const size_t vocab = ctx.logits(0).size();
  if (draft_probs.size() != k * vocab)
    return InvalidArgument(fmt::format("draft probabilities: {} values for {} proposed tokens of a vocabulary of {}",
                                       draft_probs.size(), k, vocab));
  std::vector<float> p(vocab);
  std::vector<double> weights(vocab);
  for (size_t row = 0; row <= k; ++row) {
    DecodingRowContext row_ctx(ctx, row);
    const Status s = strategy.distribution(row_ctx, p);
    // A strategy that turns out not to expose its distribution: verify as certain.
    if (s.code() == StatusCode::unsupported && row == 0) return strategy.verify(ctx, out);
    TESSERA_RETURN_IF_ERROR(s);
    double total = 0.0;
    for (size_t v = 0; v < vocab; ++v) total += std::max(0.0f, p[v]);
    if (!(total > 0.0)) return Internal("the decoding strategy's distribution has no mass");

    if (row == k) {  // every proposal kept: the bonus token, from p
      for (size_t v = 0; v < vocab; ++v) weights[v] = std::max(0.0f, p[v]);
      out.push_back(draw_index(weights, total, ctx.rng()));
      return Status::Ok();
    }
    const auto x = static_cast<size_t>(proposed[row]);
    if (x >= vocab) return InvalidArgument(fmt::format("proposed token {} is outside the vocabulary", x));
    const std::span<const float> q = draft_probs.subspan(row * vocab, vocab);
    const double px = std::max(0.0f, p[x]) / total;
    const double qx = q[x];
    if (qx > 0.0 && uniform01(ctx.rng()) < std::min(1.0, px / qx)) {
      out.push_back(proposed[row]);
      continue;
    }
    // Rejected: draw from the residual max(0, p - q), normalised.
    double residual = 0.0;
    for (size_t v = 0; v < vocab; ++v) {
      weights[v] = std::max(0.0, std::max(0.0f, p[v]) / total - static_cast<double>(q[v]));
      residual += weights[v];
    }
    if (!(residual > 0.0)) {  // p == q up to rounding: p itself
      for (size_t v = 0; v < vocab; ++v) weights[v] = std::max(0.0f, p[v]);
      residual = total;
    }
    out.push_back(draw_index(weights, residual, ctx.rng()));
    return Status::Ok();
  }
  return Status::Ok();
}

}  // namespace tessera
