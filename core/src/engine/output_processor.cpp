#include "engine/output_processor.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include <fmt/format.h>

#include "engine/draft_verification.hpp"

namespace tessera {

bool all_finite(std::span<const float> values) {
  // Exponent bits all ones is NaN or infinity. An integer test vectorizes
  // (a float comparison with NaN would not under strict IEEE semantics), so
  // a row of 49k logits costs a few microseconds.
  uint32_t bad = 0;
  for (const float v : values) {
    const auto bits = std::bit_cast<uint32_t>(v);
    bad |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  return bad == 0;
}

Status OutputProcessor::apply(RequestTable& requests, const StepPlan& plan, const RowsOf& rows_of,
                              const TextCallback& on_text, const DoneCallback& on_done, StepTotals& totals) {
  const auto now = Clock::now();
  for (size_t i = 0; i < plan.items.size(); ++i) {
    const ScheduledRequest& item = plan.items[i];
    Request& r = *item.request;
    // The committed tokens of this step are in memory now; draft tokens count
    // only once accepted.
    r.n_computed += item.n_tokens - item.n_proposed;
    memory_.record_tokens(r.seq, r.tokens().first(static_cast<size_t>(r.n_computed)));
    if (item.n_logits == 0) continue;  // a prompt chunk short of the prompt's end: no token yet

    RequestMetrics& m = r.outcome.result.metrics;
    if (m.generated_tokens == 0 && m.prefill_ms == 0) m.prefill_ms = ms_between(r.submitted, now);
    const std::span<float> logits = rows_of(i);
    if (!all_finite(logits)) return explain_nonfinite_ ? explain_nonfinite_() : Internal("non-finite logits");
    TESSERA_RETURN_IF_ERROR(choose(item, logits));

    // Drafts the strategy kept: the leading chosen tokens equal to them.
    const auto proposed = r.ctx->proposed();
    size_t accepted = 0;
    while (accepted < proposed.size() && accepted < chosen_.size() && chosen_[accepted] == proposed[accepted])
      ++accepted;
    totals.drafted_tokens += item.n_proposed;
    totals.accepted_tokens += static_cast<int64_t>(accepted);
    m.drafted_tokens += item.n_proposed;
    m.accepted_tokens += static_cast<int64_t>(accepted);
    if (item.n_proposed > 0) ++m.draft_steps;
    r.accepted_drafts = static_cast<int32_t>(accepted);
    const int32_t n_valid = r.n_computed + static_cast<int32_t>(accepted);
    r.ctx->clear_proposal();

    if (m.generated_tokens == 0) {
      r.first_token_at = Clock::now();
      m.ttft_ms = ms_between(r.submitted, r.first_token_at);
    }
    if (const char* stop = commit(r, on_text, totals)) {
      m.stop_reason = stop;
      finish(requests, r, Status::Ok(), on_done);
      continue;
    }
    TESSERA_RETURN_IF_ERROR(roll_back(r, n_valid));
  }
  return Status::Ok();
}

Status OutputProcessor::choose(const ScheduledRequest& item, std::span<float> logits) {
  Request& r = *item.request;
  r.ctx->set_logits(logits);
  chosen_.clear();
  // Sampled drafts come with the distribution each was drawn from, for
  // rejection sampling; certain ones (greedy, lookup) go to verify().
  const Status s = item.n_proposed > 0 ? verify_draft(strategy_, *r.ctx, r.ctx->proposal_probs(), chosen_)
                                       : strategy_.step(*r.ctx, chosen_);
  TESSERA_RETURN_IF_ERROR(s);
  if (chosen_.empty()) return Internal("the decoding plugin chose no token");
  const auto vocab = static_cast<int64_t>(logits.size() / static_cast<size_t>(item.n_logits));
  for (const int32_t token : chosen_) {
    if (token < 0 || token >= vocab)
      return Internal(fmt::format("the decoding plugin chose token {} outside the vocabulary of {}", token, vocab));
  }
  return Status::Ok();
}

const char* OutputProcessor::commit(Request& r, const TextCallback& on_text, StepTotals& totals) {
  RequestMetrics& m = r.outcome.result.metrics;
  for (const int32_t token : chosen_) {
    if (!r.request.ignore_eos && tokenizer_.is_end_of_generation(token)) return "eos";
    r.ctx->push(token);
    m.token_ids.push_back(token);
    ++m.generated_tokens;
    ++totals.generated_tokens;
    r.last_token_at = Clock::now();
    auto [piece, stopped] = r.stop.push(r.stream->push(token));
    r.outcome.result.text += piece;
    if (on_text && !piece.empty()) on_text(r.index, piece);
    if (stopped) return "stop";
    if (m.generated_tokens >= r.request.max_tokens) return "max_tokens";
    if (r.n_tokens() >= context_) return "context_full";
  }
  return nullptr;
}

Status OutputProcessor::roll_back(Request& r, int32_t n_valid) {
  // The memory holds the step's draft tokens; those rejected must go.
  const int32_t held = memory_.length(r.seq);
  if (r.checkpoint) {
    const CheckpointId checkpoint = *r.checkpoint;
    r.checkpoint.reset();
    if (held > n_valid) {
      // Back to the state before the drafts; the accepted ones are computed
      // again in the next step, with the rest of the request's new tokens.
      TESSERA_RETURN_IF_ERROR(memory_.restore(r.seq, checkpoint));
      r.n_computed = memory_.length(r.seq);
    } else {
      r.n_computed = n_valid;
    }
    memory_.drop_checkpoint(r.seq, checkpoint);
    return Status::Ok();
  }
  if (held > n_valid) {
    if (!truncates_) return Internal("draft tokens were verified without a checkpoint on a memory that cannot truncate");
    TESSERA_RETURN_IF_ERROR(memory_.truncate(r.seq, n_valid));
  }
  r.n_computed = std::min(n_valid, memory_.length(r.seq));
  return Status::Ok();
}

void OutputProcessor::finish(RequestTable& requests, Request& r, Status status, const DoneCallback& on_done) {
  if (r.has_seq) {
    memory_.release(r.seq);
    r.has_seq = false;
    r.checkpoint.reset();
  }
  r.done = true;
  r.outcome.status = std::move(status);
  RequestMetrics& m = r.outcome.result.metrics;
  if (m.generated_tokens > 0) m.decode_ms = ms_between(r.first_token_at, r.last_token_at);
  // The last bytes the stream decoder held (an unfinished character) and the
  // tail the stop strings held; not streamed: on_done's text has them.
  if (r.stream) r.outcome.result.text += r.stop.push(r.stream->flush()).released;
  r.outcome.result.text += r.stop.flush();
  requests.running.erase(std::remove(requests.running.begin(), requests.running.end(), &r), requests.running.end());
  if (on_done) on_done(r.outcome);
}

}  // namespace tessera
