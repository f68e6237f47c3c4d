#include "engine/scheduler.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/decoding_context.hpp"
#include "tokenizer/stream_decoder.hpp"

namespace tessera {

struct Scheduler::Request {
  size_t index = 0;
  GenerationRequest request;
  std::unique_ptr<RequestDecodingContext> ctx;  // owns prompt + generated tokens
  std::unique_ptr<tok::StreamDecoder> stream;
  SeqId seq = -1;
  bool has_seq = false;
  int32_t n_computed = 0;  // leading tokens whose K/V are in the cache
  int32_t scheduled = 0;   // tokens in the current step
  bool done = false;
  Clock::time_point submitted, first_token_at, last_token_at, prefill_done;
  RequestOutcome outcome;

  std::span<const int32_t> tokens() const { return ctx->tokens(); }
  int32_t n_tokens() const { return static_cast<int32_t>(ctx->tokens().size()); }
};

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
          {"decode_tokens_per_s", decode_step_ms > 0 ? decode_step_tokens * 1000.0 / decode_step_ms : 0.0}};
}

Scheduler::Scheduler(Session& session, SchedulerConfig config) : session_(session), config_(config) {}
Scheduler::~Scheduler() {
  for (Request* r : running_) {
    if (r->has_seq) session_.cache().release(r->seq);
  }
}

uint64_t Scheduler::pool_tokens() const {
  const KvStats s = session_.cache().stats();
  return static_cast<uint64_t>(s.blocks_total) * static_cast<uint64_t>(session_.cache().layer(0).block_size);
}

size_t Scheduler::submit(GenerationRequest request) {
  auto r = std::make_unique<Request>();
  r->index = requests_.size();
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
    const int64_t need = std::min<int64_t>(static_cast<int64_t>(ids->size()) + std::max<int64_t>(request.max_tokens, 1),
                                           context);
    if (static_cast<int64_t>(ids->size()) >= context) {
      r->outcome.status = InvalidArgument(fmt::format(
          "the prompt has {} tokens but the context holds {} (at least one more is needed to generate); shorten "
          "the prompt or raise [run] context",
          ids->size(), context));
      r->done = true;
    } else if (static_cast<uint64_t>(need) > pool_tokens()) {
      r->outcome.status = OutOfMemory(fmt::format(
          "request {} needs KV memory for {} tokens but the whole cache holds {}; give [kvcache] more memory or "
          "lower max_tokens",
          r->index, need, pool_tokens()));
      r->done = true;
    } else {
      r->ctx = std::make_unique<RequestDecodingContext>(std::span<float>{}, *ids, request.sampling);
      r->stream = std::make_unique<tok::StreamDecoder>(session_.tokenizer());
      if (request.max_tokens == 0) {
        r->outcome.result.metrics.stop_reason = "max_tokens";
        r->done = true;
      }
    }
  }
  r->request = std::move(request);
  if (!r->done) waiting_.push_back(r.get());
  requests_.push_back(std::move(r));
  return requests_.size() - 1;
}

Status Scheduler::admit() {
  KvCache& cache = session_.cache();
  const int64_t block_size = cache.layer(0).block_size;
  while (!waiting_.empty() && static_cast<int32_t>(running_.size()) < config_.max_running) {
    Request* r = waiting_.front();
    // Admission control: admit only while the free blocks cover what every
    // running request may still grow to, plus this request's (see
    // SchedulerConfig::reserve_max_tokens). Over-admitting would only lead to
    // preempting and recomputing. A request is always admitted when nothing
    // runs, so the queue cannot stall.
    if (!running_.empty()) {
      const KvStats stats = cache.stats();
      auto blocks_for = [&](int64_t tokens) { return (tokens + block_size - 1) / block_size; };
      auto final_tokens = [&](const Request* q) -> int64_t {
        if (!config_.reserve_max_tokens) return q->n_tokens() + 1;
        return std::min<int64_t>(session_.context_length(),
                                 q->outcome.result.metrics.prompt_tokens + std::max<int64_t>(q->request.max_tokens, 1));
      };
      int64_t free_blocks = stats.blocks_total - stats.blocks_used;
      for (const Request* q : running_) {
        const auto held = static_cast<int64_t>(cache.block_table(q->seq).size());
        free_blocks -= std::max<int64_t>(0, blocks_for(final_tokens(q)) - held);
      }
      if (blocks_for(final_tokens(r)) > free_blocks) break;
    }
    auto seq = cache.create_sequence();
    if (!seq.ok()) {
      if (seq.status().code() == StatusCode::out_of_memory) break;  // wait for others to finish
      return seq.status();
    }
    r->seq = *seq;
    r->has_seq = true;
    // Prefix caching: blocks already holding a prefix of these tokens are reused.
    r->n_computed = cache.reuse_prefix(r->seq, r->tokens());
    if (r->n_computed > 0) spdlog::debug("request {}: {} tokens from the prefix cache", r->index, r->n_computed);
    waiting_.pop_front();
    running_.push_back(r);
  }
  stats_.max_running = std::max<int64_t>(stats_.max_running, static_cast<int64_t>(running_.size()));
  return Status::Ok();
}

void Scheduler::preempt(Request& r) {
  session_.cache().release(r.seq);
  r.has_seq = false;
  r.n_computed = 0;
  r.scheduled = 0;
  ++r.outcome.preemptions;
  ++stats_.preemptions;
  running_.erase(std::find(running_.begin(), running_.end(), &r));
  waiting_.push_front(&r);
  spdlog::debug("request {} preempted (recompute): the cache is full", r.index);
}

void Scheduler::finish(Request& r, Status status, const DoneCallback& on_done) {
  if (r.has_seq) {
    session_.cache().release(r.seq);
    r.has_seq = false;
  }
  r.done = true;
  r.outcome.status = std::move(status);
  RequestMetrics& m = r.outcome.result.metrics;
  if (m.generated_tokens > 0) m.decode_ms = ms_between(r.first_token_at, r.last_token_at);
  const std::string tail = r.stream ? r.stream->flush() : std::string();
  r.outcome.result.text += tail;
  running_.erase(std::remove(running_.begin(), running_.end(), &r), running_.end());
  stats_.generated_tokens += m.generated_tokens;
  if (on_done) on_done(r.outcome);
}

Status Scheduler::step(const TextCallback& on_text, const DoneCallback& on_done) {
  const auto step_start = Clock::now();
  TESSERA_RETURN_IF_ERROR(admit());
  KvCache& cache = session_.cache();

  // Plan: decoders first (one token each), then prefill chunks, within the budget.
  std::vector<Request*> batch;
  int32_t budget = config_.max_batch_tokens;
  for (Request* r : running_) {
    r->scheduled = 0;
    if (r->n_tokens() - r->n_computed == 1 && budget > 0) {
      r->scheduled = 1;
      --budget;
      batch.push_back(r);
    }
  }
  bool decode_only = true;  // no prompt chunk in this step
  for (Request* r : running_) {
    const int32_t left = r->n_tokens() - r->n_computed;
    if (r->scheduled == 0 && left > 1 && budget > 0) {
      r->scheduled = std::min(left, budget);
      budget -= r->scheduled;
      batch.push_back(r);
      decode_only = false;
    }
  }

  // Reserve slots; when blocks run out, preempt the most recently admitted.
  for (size_t i = 0; i < batch.size();) {
    Request* r = batch[i];
    if (r->scheduled == 0) {  // preempted earlier in this loop
      batch.erase(batch.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    Status s = cache.append_slots(r->seq, r->scheduled);
    if (s.ok()) {
      ++i;
      continue;
    }
    if (s.code() != StatusCode::out_of_memory) return s;
    Request* victim = running_.back();
    if (victim == r && running_.size() == 1) {
      finish(*r, OutOfMemory(fmt::format("request {} alone needs more KV memory than the cache has free ({})",
                                         r->index, s.message())),
             on_done);
      batch.erase(batch.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    if (victim->scheduled > 0 && victim != r) {
      // Its slots for this step (if already reserved) go with its sequence.
      auto it = std::find(batch.begin(), batch.end(), victim);
      if (it != batch.end() && it < batch.begin() + static_cast<std::ptrdiff_t>(i)) --i;
      if (it != batch.end()) batch.erase(it);
    }
    const bool self = victim == r;
    preempt(*victim);
    if (self) batch.erase(batch.begin() + static_cast<std::ptrdiff_t>(i));
  }
  const KvStats kv = cache.stats();
  if (kv.bytes_allocated >= stats_.peak_kv_bytes_allocated) {
    stats_.peak_kv_bytes_allocated = kv.bytes_allocated;
    stats_.peak_kv_waste_percent =
        kv.bytes_allocated > 0 ? 100.0 * static_cast<double>(kv.bytes_allocated - std::min(kv.bytes_live, kv.bytes_allocated)) /
                                     static_cast<double>(kv.bytes_allocated)
                               : 0.0;
    session_.note_kv_stats(kv);
  }
  if (batch.empty()) return Status::Ok();

  // One forward for the whole batch: the weights are read once per step.
  std::vector<int32_t> tokens;
  std::vector<BatchSeq> seqs;
  for (Request* r : batch) {
    const auto offset = static_cast<int32_t>(tokens.size());
    tokens.insert(tokens.end(), r->tokens().begin() + r->n_computed,
                  r->tokens().begin() + r->n_computed + r->scheduled);
    seqs.push_back({r->seq, offset, r->scheduled, r->n_computed, false});
  }
  const auto vocab = static_cast<size_t>(session_.hparams().vocab_size);
  if (logits_.size() < batch.size() * vocab) logits_.resize(batch.size() * vocab);
  TESSERA_RETURN_IF_ERROR(session_.model().forward(Batch{tokens, seqs}, cache, logits_.data()));
  ++stats_.steps;
  const auto now = Clock::now();

  std::vector<int32_t> chosen;
  int64_t step_tokens = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    Request& r = *batch[i];
    r.n_computed += r.scheduled;
    cache.record_tokens(r.seq, r.tokens().subspan(0, static_cast<size_t>(r.n_computed)));
    if (r.n_computed < r.n_tokens()) continue;  // a prefill chunk: no token yet
    RequestMetrics& m = r.outcome.result.metrics;
    if (m.generated_tokens == 0 && m.prefill_ms == 0) m.prefill_ms = ms_between(r.submitted, now);
    r.ctx->set_logits(std::span<float>(logits_.data() + i * vocab, vocab));
    chosen.clear();
    TESSERA_RETURN_IF_ERROR(session_.strategy().step(*r.ctx, chosen));
    if (chosen.empty()) return Internal("the decoding plugin chose no token");
    if (m.generated_tokens == 0) {
      r.first_token_at = Clock::now();
      m.ttft_ms = ms_between(r.submitted, r.first_token_at);
    }
    const char* stop = nullptr;
    for (int32_t token : chosen) {
      if (token < 0 || static_cast<size_t>(token) >= vocab)
        return Internal(fmt::format("the decoding plugin chose token {} outside the vocabulary", token));
      if (!r.request.ignore_eos && session_.tokenizer().is_end_of_generation(token)) {
        stop = "eos";
        break;
      }
      r.ctx->push(token);
      m.token_ids.push_back(token);
      ++m.generated_tokens;
      ++step_tokens;
      r.last_token_at = Clock::now();
      const std::string piece = r.stream->push(token);
      r.outcome.result.text += piece;
      if (on_text && !piece.empty()) on_text(r.index, piece);
      if (m.generated_tokens >= r.request.max_tokens) {
        stop = "max_tokens";
        break;
      }
      if (r.n_tokens() >= session_.context_length()) {
        stop = "context_full";
        break;
      }
    }
    if (stop != nullptr) {
      m.stop_reason = stop;
      finish(r, Status::Ok(), on_done);
    }
  }
  if (decode_only) {
    stats_.decode_step_tokens += step_tokens;
    stats_.decode_step_ms += ms_between(step_start, Clock::now());
  }
  return Status::Ok();
}

Result<std::vector<RequestOutcome>> Scheduler::run(const TextCallback& on_text, const DoneCallback& on_done) {
  const auto start = Clock::now();
  for (const auto& r : requests_) {
    if (r->done && on_done) on_done(r->outcome);  // rejected at submission
  }
  while (!waiting_.empty() || !running_.empty()) {
    const size_t before = waiting_.size() + running_.size();
    const int64_t steps_before = stats_.steps;
    TESSERA_RETURN_IF_ERROR(step(on_text, on_done));
    if (stats_.steps == steps_before && running_.empty() && waiting_.size() == before)
      return Internal("the scheduler made no progress: the cache admits no sequence although none is running");
  }
  stats_.wall_ms = ms_between(start, Clock::now());
  stats_.prefix_hit_tokens = session_.cache().stats().prefix_hit_tokens;
  std::vector<RequestOutcome> out;
  for (const auto& r : requests_) out.push_back(r->outcome);
  return out;
}

}  // namespace tessera
