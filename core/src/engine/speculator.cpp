#include "engine/speculator.hpp"

#include <algorithm>
#include <cmath>

#include <spdlog/spdlog.h>

namespace tessera {

Speculator::Speculator(SpeculatorSettings settings, std::unique_ptr<DraftModel> draft, DecodingStrategy* strategy,
                       size_t row_width)
    : settings_(settings), draft_(std::move(draft)), strategy_(strategy), row_width_(row_width) {}

Speculator::RequestDrafting& Speculator::drafting_of(const Request& r) {
  auto it = requests_.find(r.index);
  if (it != requests_.end()) return it->second;
  DraftLengthSettings lookup{settings_.max_draft_tokens, settings_.adaptive, /*costs_draft=*/false};
  DraftLengthSettings model{settings_.max_draft_tokens, settings_.adaptive, /*costs_draft=*/true};
  return requests_.emplace(r.index, RequestDrafting{DraftLength(lookup), DraftLength(model), Source::none})
      .first->second;
}

Status Speculator::propose(Request& r, int32_t max_tokens, std::vector<int32_t>& out, std::vector<float>& probs) {
  probs.clear();
  RequestDrafting& d = drafting_of(r);
  d.last = Source::none;
  // Prompt lookup's proposal, if it has one (free to find).
  lookup_.clear();
  if (settings_.lookup) {
    const int32_t k = std::min(max_tokens, d.lookup.next(costs_));
    if (k > 0) {
      lookup_continuation(r.tokens(), settings_.lookup_settings, k, lookup_);
      if (lookup_.empty()) d.lookup.record(0, 0);
    }
  }
  const int32_t model_k = draft_ ? std::min(max_tokens, d.model.next(costs_)) : 0;
  // With both: the draft model where lookup found nothing, or where its
  // drafts are expected to yield more per millisecond than lookup's (code
  // recurs in short n-grams that lookup proposes and the model beats).
  const auto n_lookup = static_cast<int32_t>(lookup_.size());
  const bool use_lookup =
      n_lookup > 0 && (model_k == 0 || d.lookup.rate(n_lookup, costs_) >= d.model.rate(model_k, costs_));
  if (use_lookup) {
    out = lookup_;
    d.last = Source::lookup;
  } else if (model_k > 0) {
    forward_ms_.clear();
    DraftSampling sampling{strategy_, &r.ctx->sampling(), &r.ctx->rng(), row_width_, r.ctx->prompt_length()};
    const bool sample = strategy_ != nullptr && !d.certain_drafts;
    TESSERA_RETURN_IF_ERROR(
        draft_->draft(r.index, r.tokens(), model_k, out, forward_ms_, sample ? &sampling : nullptr, &probs));
    if (sample && !out.empty() && probs.empty()) d.certain_drafts = true;
    for (const double ms : forward_ms_) costs_.record_draft(ms);
    if (out.empty()) d.model.record(0, 0);
    d.last = Source::model;
  }
  // Turned off: every source of drafts stopped paying for this request (it
  // may come back on at a probe; the metric records that it happened).
  if ((draft_ == nullptr || d.model.off()) && (!settings_.lookup || d.lookup.off()))
    r.outcome.result.metrics.speculation_turned_off = true;
  return Status::Ok();
}

void Speculator::verified(Request& r, int32_t proposed, int32_t accepted) {
  RequestDrafting& d = drafting_of(r);
  if (d.last == Source::lookup) d.lookup.record(proposed, accepted);
  if (d.last == Source::model) d.model.record(proposed, accepted);
  spdlog::debug("request {}: {} of {} drafts kept", r.index, accepted, proposed);
}

void Speculator::timed_step(int32_t requests, int32_t drafted, double ms) {
  if (requests <= 0) return;
  const auto k = static_cast<int32_t>(std::lround(static_cast<double>(drafted) / requests));
  costs_.record_step(k, ms / requests);
  // `tessera ... -v` traces what the adaptive lengths are chosen from: each
  // decode step's drafts (all its requests') and its time per request (one
  // line a step: a level check when debug logging is off).
  spdlog::debug("speculative step: {} requests, {} drafts, {:.1f} ms a request", requests, drafted, ms / requests);
}

void Speculator::finished(const Request& r) {
  requests_.erase(r.index);
  if (draft_) draft_->forget(r.index);
}

}  // namespace tessera
