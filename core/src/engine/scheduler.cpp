#include "engine/scheduler.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace tessera {

nlohmann::json RequestOutcome::to_json() const {
  nlohmann::json j = result.metrics.to_json();
  j["index"] = index;
  j["text"] = result.text;
  j["preemptions"] = preemptions;
  j["prompt_ids"] = result.prompt_ids;
  if (!status.ok()) j["error"] = status.message();
  return j;
}

nlohmann::json SchedulerStats::to_json() const {
  return {{"steps", steps},
          {"max_running", max_running},
          {"preemptions", preemptions},
          {"peak_kv_bytes_allocated", peak_kv_bytes_allocated},
          {"peak_kv_waste_percent", peak_kv_waste_percent},
          {"prefix_hit_tokens", prefix_hit_tokens},
          {"wall_ms", wall_ms},
          {"generated_tokens", generated_tokens},
          {"tokens_per_s", wall_ms > 0 ? generated_tokens * 1000.0 / wall_ms : 0.0},
          {"decode_step_tokens", decode_step_tokens},
          {"decode_step_ms", decode_step_ms},
          {"decode_tokens_per_s", decode_step_ms > 0 ? decode_step_tokens * 1000.0 / decode_step_ms : 0.0},
          {"drafted_tokens", speculation.drafted_tokens},
          {"accepted_tokens", speculation.accepted_tokens},
          {"speculation", speculation.to_json()}};
}

Scheduler::Scheduler(Session& session, SchedulerConfig config, DraftProposer* proposer)
    : session_(session),
      config_(config),
      proposer_(proposer != nullptr ? proposer : session.draft_proposer()),
      planner_(session.memory(), session.context_length(), config, proposer_, session.memory_truncates()),
      executor_(session.model(), session.memory(), session.thread_governor()),
      outputs_(session.memory(), session.strategy(), session.tokenizer(), session.context_length(),
               session.memory_truncates(), [&session] { return session.explain_nonfinite_logits(); }) {}

Scheduler::~Scheduler() {
  for (Request* r : requests_.running) {
    if (r->has_seq) session_.memory().release(r->seq);
  }
  // Requests left unfinished (a failed run): the proposer forgets them too.
  if (proposer_ != nullptr) {
    for (const auto& r : requests_.all)
      if (r && !r->done) proposer_->finished(*r);
  }
}

size_t Scheduler::submit(GenerationRequest request) {
  auto r = std::make_unique<Request>();
  r->index = requests_.all.size();
  r->submitted = Clock::now();
  r->outcome.index = r->index;
  r->outcome.result.metrics.seed = request.sampling.seed;
  auto ids = session_.prompt_ids(request);
  if (!ids.ok()) {
    r->outcome.status = ids.status();
    r->done = true;
  } else {
    r->outcome.result.prompt_ids = *ids;
    r->outcome.result.metrics.prompt_tokens = static_cast<int64_t>(ids->size());
    const int64_t context = session_.context_length();
    const int64_t longest = session_.memory().max_sequence_tokens();
    const int64_t need = std::min<int64_t>(static_cast<int64_t>(ids->size()) + std::max<int64_t>(request.max_tokens, 1),
                                           context);
    if (static_cast<int64_t>(ids->size()) >= context) {
      r->outcome.status = InvalidArgument(fmt::format(
          "the prompt has {} tokens but the context holds {} (at least one more is needed to generate); shorten "
          "the prompt or raise [run] context",
          ids->size(), context));
      r->done = true;
    } else if (need > longest) {
      r->outcome.status = OutOfMemory(fmt::format(
          "request {} needs memory for {} tokens but the whole kvcache holds {} for one sequence; give [kvcache] "
          "more memory or lower max_tokens",
          r->index, need, longest));
      r->done = true;
    } else {
      r->ctx = std::make_unique<RequestDecodingContext>(*ids, request.sampling);
      r->stream = std::make_unique<tok::StreamDecoder>(session_.tokenizer());
      if (request.max_tokens == 0) {
        r->outcome.result.metrics.stop_reason = "max_tokens";
        r->done = true;
      }
    }
  }
  r->stop = StopStrings(request.stop);
  r->request = std::move(request);
  if (!r->done) requests_.waiting.push_back(r.get());
  requests_.all.push_back(std::move(r));
  return requests_.all.size() - 1;
}

void Scheduler::note_memory() {
  const MemoryStats kv = session_.memory().stats();
  if (kv.bytes_allocated < stats_.peak_kv_bytes_allocated) return;
  stats_.peak_kv_bytes_allocated = kv.bytes_allocated;
  stats_.peak_kv_waste_percent =
      kv.bytes_allocated > 0
          ? 100.0 * static_cast<double>(kv.bytes_allocated - std::min(kv.bytes_live, kv.bytes_allocated)) /
                static_cast<double>(kv.bytes_allocated)
          : 0.0;
  session_.note_memory_stats(kv);
}

Status Scheduler::check_config() const {
  // A step that may take no token would never finish a request.
  if (config_.max_batch_tokens < 1)
    return InvalidArgument(fmt::format("max_batch_tokens must be at least 1, got {}", config_.max_batch_tokens));
  if (config_.max_running < 1)
    return InvalidArgument(fmt::format("max_running must be at least 1, got {}", config_.max_running));
  return Status::Ok();
}

bool Scheduler::cancel(size_t index, const DoneCallback& on_done) {
  Request* r = requests_.all.at(index).get();
  if (r == nullptr || r->done) return false;
  requests_.waiting.erase(std::remove(requests_.waiting.begin(), requests_.waiting.end(), r), requests_.waiting.end());
  r->outcome.result.metrics.stop_reason = "cancelled";
  outputs_.finish(requests_, *r, Status::Ok(), on_done);
  if (proposer_ != nullptr) proposer_->finished(*r);
  return true;
}

void Scheduler::forget(size_t index) {
  auto& r = requests_.all.at(index);
  if (r && r->done) r.reset();
}

void Scheduler::refresh_stats() {
  const PlannerStats& planned = planner_.stats();
  stats_.max_running = planned.max_running;
  stats_.preemptions = planned.preemptions;
  stats_.prefix_hit_tokens = session_.memory().stats().prefix_hit_tokens;
  stats_.speculation.draft_ms = planned.draft_ms;
}

Status Scheduler::step(const TextCallback& on_text, const DoneCallback& on_done) {
  TESSERA_RETURN_IF_ERROR(check_config());
  const auto step_start = Clock::now();
  auto plan = planner_.plan(requests_);
  if (!plan.ok()) return plan.status();
  for (auto& [request, status] : plan->failed) {
    outputs_.finish(requests_, *request, std::move(status), on_done);
    if (proposer_ != nullptr) proposer_->finished(*request);
  }
  note_memory();
  if (plan->items.empty()) {
    refresh_stats();
    return Status::Ok();
  }

  const auto execute_start = Clock::now();
  TESSERA_RETURN_IF_ERROR(executor_.execute(*plan));
  ++stats_.steps;
  StepTotals totals;
  TESSERA_RETURN_IF_ERROR(outputs_.apply(
      requests_, *plan, [this](size_t item) { return executor_.logits(item); }, on_text, on_done, totals));
  const double executed_ms = ms_between(execute_start, Clock::now());
  stats_.generated_tokens += totals.generated_tokens;
  if (plan->decode_only) {
    stats_.decode_step_tokens += totals.generated_tokens;
    stats_.decode_step_ms += ms_between(step_start, Clock::now());
  }
  if (totals.drafted_tokens > 0) stats_.speculation.verify_ms += executed_ms;
  if (proposer_ != nullptr) report_to_proposer(*plan, executed_ms);
  refresh_stats();
  return Status::Ok();
}

void Scheduler::report_to_proposer(const StepPlan& plan, double executed_ms) {
  int32_t drafted = 0;
  for (const ScheduledRequest& item : plan.items) {
    Request& r = *item.request;
    if (item.n_proposed > 0) {
      stats_.speculation.add(item.n_proposed, r.accepted_drafts);
      proposer_->verified(r, item.n_proposed, r.accepted_drafts);
      drafted += item.n_proposed;
    }
    if (r.done) proposer_->finished(r);
  }
  if (plan.decode_only) proposer_->timed_step(static_cast<int32_t>(plan.items.size()), drafted, executed_ms);
}

Result<std::vector<RequestOutcome>> Scheduler::run(const TextCallback& on_text, const DoneCallback& on_done) {
  TESSERA_RETURN_IF_ERROR(check_config());
  const auto start = Clock::now();
  for (const auto& r : requests_.all) {
    if (r && r->done && on_done) on_done(r->outcome);  // rejected at submission
  }
  while (busy()) {
    const size_t before = requests_.waiting.size() + requests_.running.size();
    const int64_t steps_before = stats_.steps;
    TESSERA_RETURN_IF_ERROR(step(on_text, on_done));
    if (stats_.steps == steps_before && requests_.running.empty() && requests_.waiting.size() == before)
      return Internal("the scheduler made no progress: the memory admits no sequence although none is running");
  }
  stats_.wall_ms = ms_between(start, Clock::now());
  refresh_stats();
  std::vector<RequestOutcome> out;
  for (const auto& r : requests_.all) {
    if (!r) continue;  // forgotten
    stats_.speculation.requests_turned_off += r->outcome.result.metrics.speculation_turned_off ? 1 : 0;
    out.push_back(r->outcome);
  }
  return out;
}

}  // namespace tessera
