#include "engine/draft_length.hpp"

#include <algorithm>
#include <cmath>

namespace tessera {

namespace {

// Weight of the newest sample in the running means: about the last ten count.
constexpr double kNewest = 0.1;
// Each verification outcome discounts the older ones by this much (the
// acceptance of the last dozen or so drafts decides).
constexpr double kForget = 0.92;
// Longest rest between probes of a request whose drafting turned off.
constexpr int32_t kMaxRest = 256;
// Until verifying k drafts was measured: each draft token adds this much of a
// plain step (a memory-bound CPU step reads the weights once for all rows;
// the first measurement replaces the guess).
constexpr double kGuessPerDraft = 0.15;
// Plain decode steps measured before the first draft.
constexpr int64_t kPlainStepsFirst = 2;

void running_mean(double& mean, int64_t& samples, double value) {
  mean = samples == 0 ? value : mean + kNewest * (value - mean);
  ++samples;
}

}  // namespace

void DraftCosts::record_step(int32_t k, double ms) {
  if (k < 0 || k > kMaxDraftTokens || !(ms > 0)) return;
  running_mean(step_ms_[static_cast<size_t>(k)], samples_[static_cast<size_t>(k)], ms);
}

void DraftCosts::record_draft(double ms) {
  if (ms > 0) running_mean(draft_ms_, draft_samples_, ms);
}

double DraftCosts::step_ms(int32_t k) const {
  k = std::clamp(k, 0, kMaxDraftTokens);
  if (measured(k)) return step_ms_[static_cast<size_t>(k)];
  // The nearest measured lengths below and above k.
  int32_t below = -1, above = -1;
  for (int32_t j = k - 1; j >= 0 && below < 0; --j)
    if (measured(j)) below = j;
  for (int32_t j = k + 1; j <= kMaxDraftTokens && above < 0; ++j)
    if (measured(j)) above = j;
  auto at = [&](int32_t j) { return step_ms_[static_cast<size_t>(j)]; };
  if (below >= 0 && above >= 0) return at(below) + (at(above) - at(below)) * (k - below) / (above - below);
  if (below < 0 && above < 0) return 0;  // nothing measured
  if (below < 0) return at(above);       // a shorter verification costs no more
  // Beyond the longest measured: extend the slope between the two longest
  // measured, or guess it from a plain step.
  int32_t before = -1;
  for (int32_t j = below - 1; j >= 0 && before < 0; --j)
    if (measured(j)) before = j;
  const double slope = before >= 0 ? std::max(0.0, (at(below) - at(before)) / (below - before))
                                   : kGuessPerDraft * at(below) / (below + 1);
  return at(below) + slope * (k - below);
}

int32_t DraftLength::next(const DraftCosts& costs) {
  const int32_t most = std::clamp(settings_.max_tokens, 0, kMaxDraftTokens);
  if (!settings_.adaptive || most == 0) return most;
  if (off_) {
    if (rest_ > 0) {
      --rest_;
      return 0;
    }
    // Probe: a short draft to see whether acceptance rose.
    return std::min(most, 2);
  }
  // Plain steps must have been measured to compare against: two, since the
  // first decode step after a prefill can run slow or fast by chance, and
  // while drafting pays no plain step measures it again.
  if (costs.samples(0) < kPlainStepsFirst) return 0;
  double best_rate = rate(0, costs);
  int32_t best = 0;
  for (int32_t k = 1; k <= most; ++k) {
    const double r = rate(k, costs);
    if (r > best_rate) best_rate = r, best = k;
  }
  if (best == 0) {
    off_ = true;
    ++times_off_;
    rest_ = rest_next_;
    rest_next_ = std::min(kMaxRest, rest_next_ * 2);
  }
  return best;
}

double DraftLength::rate(int32_t k, const DraftCosts& costs) const {
  const double ms = costs.step_ms(k) + (settings_.costs_draft ? k * costs.draft_ms() : 0.0);
  if (!(ms > 0)) return 0.0;
  // 1 + a + ... + a^k tokens.
  const double a = std::min(acceptance(), 0.999);
  double expected = 1.0, power = 1.0;
  for (int32_t i = 0; i < k; ++i) expected += (power *= a);
  return expected / ms;
}

void DraftLength::record(int32_t proposed, int32_t accepted) {
  if (proposed <= 0) {
    // Asked for drafts and got none (the draft was unsure, or nothing
    // recurred): a probe that found nothing rests like one that failed.
    if (off_) rest_ = rest_next_;
    return;
  }
  accepted_ = accepted_ * kForget + accepted;
  rejected_ = rejected_ * kForget + (accepted < proposed ? 1.0 : 0.0);
  if (off_) {
    // A probe: back on only when its tokens were all kept; next() decides
    // again from the new estimate whether drafting pays.
    if (accepted == proposed) {
      off_ = false;
      rest_next_ = 8;
    } else {
      rest_ = rest_next_;
      rest_next_ = std::min(kMaxRest, rest_next_ * 2);
    }
  }
}

}  // namespace tessera
