// draft_length.hpp: how many tokens a request drafts in its next step
// (speculative decoding), chosen from what was measured: how often its drafts
// are accepted, what a verification step costs with k drafts, what drafting
// one token costs. Drafting stops (for the request) when no length pays.
//
// Model (Leviathan et al. 2023, section 3): with each drafted token accepted
// with probability a, independently, a step verifying k drafts yields
// E(k) = 1 + a + ... + a^k = (1 - a^(k+1)) / (1 - a) tokens and costs
// verify(k) + k * draft. Plain decoding yields 1 token per verify(0). The
// length chosen maximises E(k) / (verify(k) + k * draft); k = 0 is "off".
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace tessera {

constexpr int32_t kMaxDraftTokens = 16;

// Costs shared by every request of one engine: a target step verifying k
// drafts (one request alone in a decode step), and one draft-model forward.
// Exponentially weighted means, so the figures follow a machine whose load
// changes.
class DraftCosts {
 public:
  // A decode step took `ms` per request, its requests verifying `k` drafts
  // each on average (one request alone measures best; a batch's share is
  // what a request adds to it, roughly).
  void record_step(int32_t k, double ms);
  // One draft forward took `ms`.
  void record_draft(double ms);

  // Estimated cost of a step verifying k drafts; the measured figure where
  // there is one, else interpolated or extended from those measured (a
  // verification of k drafts costs at least a plain step and, on a machine
  // that reads weights once per step, much less than k + 1 steps).
  double step_ms(int32_t k) const;
  bool measured(int32_t k) const { return samples(k) > 0; }
  int64_t samples(int32_t k) const { return samples_[static_cast<size_t>(k)]; }
  double draft_ms() const { return draft_ms_; }

 private:
  std::array<double, kMaxDraftTokens + 1> step_ms_{};
  std::array<int64_t, kMaxDraftTokens + 1> samples_{};
  double draft_ms_ = 0;
  int64_t draft_samples_ = 0;
};

struct DraftLengthSettings {
  int32_t max_tokens = 8;  // <= kMaxDraftTokens
  bool adaptive = true;    // false: always max_tokens
  bool costs_draft = true; // drafting runs a model (false: prompt lookup, free)
};

// One request's drafting, for one source of drafts.
class DraftLength {
 public:
  explicit DraftLength(DraftLengthSettings settings) : settings_(settings) {}

  // Tokens to draft in the next step; 0 = none (off, or resting until the
  // next probe).
  int32_t next(const DraftCosts& costs);
  // Expected tokens per millisecond of a step verifying k drafts from this
  // source (k = 0: a plain step); 0 while the costs are unknown.
  double rate(int32_t k, const DraftCosts& costs) const;
  // The step verified `proposed` drafts and kept `accepted` of them
  // (proposed = 0: next() asked for drafts and the source had none).
  void record(int32_t proposed, int32_t accepted);

  // The acceptance estimate: the chance a drafted token is kept, given those
  // before it were.
  double acceptance() const { return accepted_ / (accepted_ + rejected_); }
  // Whether drafting has stopped paying for this request (it probes again
  // now and then: text changes, from prose to code).
  bool off() const { return off_; }
  // Times it turned off.
  int32_t times_off() const { return times_off_; }

 private:
  DraftLengthSettings settings_;
  // Weighted counts of accepted tokens and of rejections (a prior of 3 and 1:
  // start drafting, optimistic, and learn fast).
  double accepted_ = 3.0;
  double rejected_ = 1.0;
  bool off_ = false;
  int32_t times_off_ = 0;
  int32_t rest_ = 0;        // steps without drafting left before the next probe
  int32_t rest_next_ = 8;   // doubles each time a probe fails, up to kMaxRest
};

}  // namespace tessera
