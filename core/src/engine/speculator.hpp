// speculator.hpp: the engine's DraftProposer for a pipeline's [speculative]
// section: prompt lookup, a draft model, or both,
// each request's draft length adapted to what its drafts achieve
// (draft_length.hpp), drafting turned off for a request when it stops paying.
// With both sources, each step takes the one expected to yield more tokens
// per millisecond.
#pragma once

#include <map>
#include <memory>
#include <optional>

#include "engine/draft_length.hpp"
#include "engine/draft_model.hpp"
#include "engine/prompt_lookup.hpp"
#include "engine/step_planner.hpp"

namespace tessera {

struct SpeculatorSettings {
  bool lookup = false;
  PromptLookupSettings lookup_settings;
  int32_t max_draft_tokens = 8;
  bool adaptive = true;
};

class Speculator final : public DraftProposer {
 public:
  // `draft` may be null (prompt lookup only). With `strategy` (the target's),
  // the draft model draws its proposals from that strategy's distribution
  // (DraftSampling); `row_width` is the target's logits row.
  Speculator(SpeculatorSettings settings, std::unique_ptr<DraftModel> draft, DecodingStrategy* strategy = nullptr,
             size_t row_width = 0);

  Status propose(Request& request, int32_t max_tokens, std::vector<int32_t>& out, std::vector<float>& probs) override;
  void verified(Request& request, int32_t proposed, int32_t accepted) override;
  void timed_step(int32_t requests, int32_t drafted, double ms) override;
  void finished(const Request& request) override;

  const DraftCosts& costs() const { return costs_; }
  DraftModel* draft_model() { return draft_.get(); }

 private:
  enum class Source { none, lookup, model };
  struct RequestDrafting {
    DraftLength lookup;
    DraftLength model;
    Source last = Source::none;
    // The strategy's distribution was a point mass on the draft's logits (a
    // greedy strategy): its drafts are the argmax, with no q to compute.
    bool certain_drafts = false;
  };
  RequestDrafting& drafting_of(const Request& request);

  SpeculatorSettings settings_;
  std::unique_ptr<DraftModel> draft_;
  DecodingStrategy* strategy_;
  size_t row_width_;
  DraftCosts costs_;
  std::map<size_t, RequestDrafting> requests_;
  std::vector<double> forward_ms_;
  std::vector<int32_t> lookup_;
};

}  // namespace tessera
