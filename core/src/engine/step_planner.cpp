#include "engine/step_planner.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/prompt_split.hpp"

namespace tessera {

Result<StepPlan> StepPlanner::plan(RequestTable& requests) {
  TESSERA_RETURN_IF_ERROR(admit(requests));
  StepPlan plan;
  int32_t budget = config_.max_batch_tokens;
  // Decoding requests first, one token each (and the drafts they verify), so
  // a long prompt never holds them up; then prompt chunks with what is left.
  for (Request* r : requests.running) {
    if (budget <= 0) break;
    if (r->n_tokens() - r->n_computed != 1) continue;
    ScheduledRequest item{r, 1, 1, 0};
    --budget;
    TESSERA_RETURN_IF_ERROR(draft(*r, budget, item));
    budget -= item.n_proposed;
    plan.items.push_back(item);
  }
  // A memory that keeps prefixes only where steps end (recurrent state
  // snapshots) gets chunks that end on its multiples: a chunk crossing one
  // stops at the first, so every multiple a prompt passes is kept (a shared
  // system prompt of 300 tokens is found at 256 whatever follows it).
  const int32_t granularity = provides(memory_, 5) ? memory_.prefix_granularity() : 0;
  for (Request* r : requests.running) {
    if (budget <= 0) break;
    const int32_t left = r->n_tokens() - r->n_computed;
    if (left <= 1) continue;
    int32_t n = std::min(left, budget);
    if (granularity > 0) {
      const int64_t next = (static_cast<int64_t>(r->n_computed) / granularity + 1) * granularity;
      if (r->n_computed + n > next) n = static_cast<int32_t>(next - r->n_computed);
    }
    // Pieces end on multiples of kPromptSplitAlignment (architecture.hpp).
    // One whose budget reaches none waits for a step with more room when
    // this step computes something else anyway and a budget this size can
    // reach one; otherwise it takes what the budget gives.
    const int32_t piece = aligned_prompt_piece(r->n_computed, n, left);
    if (piece == 0 && !plan.items.empty() && config_.max_batch_tokens >= kPromptSplitAlignment) continue;
    if (piece > 0) n = piece;
    budget -= n;
    plan.items.push_back({r, n, n == left ? 1 : 0, 0});
    plan.decode_only = false;
  }
  TESSERA_RETURN_IF_ERROR(reserve(requests, plan));
  return plan;
}

Status StepPlanner::admit(RequestTable& requests) {
  std::vector<MemoryDemand> demands;
  while (!requests.waiting.empty() && static_cast<int32_t>(requests.running.size()) < config_.max_running) {
    Request* r = requests.waiting.front();
    // Admit only while the memory holds what every running request may still
    // grow to, plus this one (SchedulerConfig::reserve_max_tokens): admitting
    // more would only lead to preempting and recomputing. A request is always
    // admitted when nothing runs, so the queue cannot stall.
    if (!requests.running.empty()) {
      auto target = [&](const Request* q) -> int64_t {
        return config_.reserve_max_tokens ? q->final_tokens(context_) : q->n_tokens() + 1;
      };
      demands.clear();
      for (const Request* q : requests.running) demands.push_back({q->seq, target(q)});
      demands.push_back({-1, target(r)});
      if (!memory_.can_hold(demands)) break;
    }
    auto seq = memory_.create_sequence();
    if (!seq.ok()) {
      if (seq.status().code() == StatusCode::out_of_memory) break;  // wait for others to finish
      return seq.status();
    }
    r->seq = *seq;
    r->has_seq = true;
    // Prefix caching: blocks already holding a prefix of these tokens are reused.
    r->n_computed = memory_.reuse_prefix(r->seq, r->tokens());
    if (r->n_computed > 0) spdlog::debug("request {}: {} tokens from the prefix cache", r->index, r->n_computed);
    requests.waiting.pop_front();
    requests.running.push_back(r);
  }
  stats_.max_running = std::max<int64_t>(stats_.max_running, static_cast<int64_t>(requests.running.size()));
  return Status::Ok();
}

Status StepPlanner::draft(Request& r, int32_t budget, ScheduledRequest& item) {
  r.ctx->clear_proposal();
  if (proposer_ == nullptr) return Status::Ok();
  // Room for drafts: the step's budget; the context (the last draft token
  // sits at position n_tokens - 1 + k); max_tokens (verification always adds
  // one token of the strategy's own after the accepted drafts).
  const int64_t generated = r.outcome.result.metrics.generated_tokens;
  const int64_t room = std::min<int64_t>({budget, config_.max_draft_tokens, context_ - r.n_tokens(),
                                          r.request.max_tokens - generated - 1});
  if (room <= 0) return Status::Ok();
  draft_.clear();
  draft_probs_.clear();
  const auto start = Clock::now();
  const Status proposed = proposer_->propose(r, static_cast<int32_t>(room), draft_, draft_probs_);
  stats_.draft_ms += ms_between(start, Clock::now());
  TESSERA_RETURN_IF_ERROR(proposed);
  if (draft_.empty()) return Status::Ok();
  if (!draft_probs_.empty() && draft_probs_.size() % draft_.size() != 0)
    return Internal("the draft proposer's probabilities are not one row per proposed token");
  if (static_cast<int64_t>(draft_.size()) > room) {
    const size_t row = draft_probs_.size() / draft_.size();
    draft_.resize(static_cast<size_t>(room));
    if (!draft_probs_.empty()) draft_probs_.resize(draft_.size() * row);
  }
  if (!truncates_) {
    // A recurrent state cannot be cut back: save it before the draft tokens
    // advance it, to return to if some are rejected.
    auto checkpoint = memory_.checkpoint(r.seq);
    if (!checkpoint.ok()) {
      if (checkpoint.status().code() == StatusCode::out_of_memory) return Status::Ok();  // verify nothing this step
      return checkpoint.status();
    }
    r.checkpoint = *checkpoint;
  }
  r.ctx->propose(draft_, draft_probs_);
  const auto k = static_cast<int32_t>(draft_.size());
  item.n_tokens += k;
  item.n_logits += k;
  item.n_proposed = k;
  return Status::Ok();
}

void StepPlanner::preempt(RequestTable& requests, Request& r) {
  memory_.release(r.seq);  // with its checkpoints
  r.has_seq = false;
  r.checkpoint.reset();
  r.n_computed = 0;
  r.ctx->clear_proposal();
  ++r.outcome.preemptions;
  ++stats_.preemptions;
  requests.running.erase(std::find(requests.running.begin(), requests.running.end(), &r));
  requests.waiting.push_front(&r);
  spdlog::debug("request {} preempted (recompute): the memory is full", r.index);
}

Status StepPlanner::reserve(RequestTable& requests, StepPlan& plan) {
  auto& items = plan.items;
  auto scheduled = [&](const Request* r) {
    return std::find_if(items.begin(), items.end(), [&](const ScheduledRequest& s) { return s.request == r; });
  };
  for (size_t i = 0; i < items.size();) {
    Request* r = items[i].request;
    Status s = memory_.append_slots(r->seq, items[i].n_tokens);
    if (s.ok()) {
      ++i;
      continue;
    }
    if (s.code() != StatusCode::out_of_memory) return s;
    // Out of slots: preempt the most recently admitted request (its slots for
    // this step, if already reserved, go with its sequence).
    Request* victim = requests.running.back();
    if (victim == r && requests.running.size() == 1) {
      plan.failed.emplace_back(r, OutOfMemory(fmt::format(
                                      "request {} alone needs more memory than the kvcache has free ({})", r->index,
                                      s.message())));
      items.erase(items.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    if (auto it = scheduled(victim); it != items.end()) {
      if (it < items.begin() + static_cast<std::ptrdiff_t>(i)) --i;
      items.erase(it);
    }
    preempt(requests, *victim);
  }
  return Status::Ok();
}

}  // namespace tessera
