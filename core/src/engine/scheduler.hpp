// scheduler.hpp: continuous batching over one Model and one KvCache.
//
// Iteration-level scheduling (Orca, vLLM): each step forms one Batch from every
// running request: one token for each decoding request first, then chunks of
// the prompts still being prefilled, up to `max_batch_tokens` (chunked prefill,
// so a long prompt never stalls the decoders). New requests join between
// steps, finished ones leave at once. When the cache runs out of blocks the
// most recently admitted request is preempted by recomputation: its sequence
// is released and it waits at the front of the queue, to be re-admitted with
// its prompt plus what it had generated. A request that could never fit
// (prompt + max_tokens beyond the context, or beyond the whole cache) is
// rejected on its own; the others are unharmed.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/session.hpp"

namespace tessera {

struct SchedulerConfig {
  int32_t max_batch_tokens = 512;  // tokens one forward may take (decode tokens + prefill chunks)
  int32_t max_running = 256;       // requests in flight at once
  // Admission: reserve room for each request's prompt plus max_tokens (no
  // preemption as long as max_tokens is honest), or, when false, only for the
  // prompt and the next token, as servers that cannot know output lengths do:
  // more requests in flight when max_tokens is a loose bound, at the price of
  // preempting (and recomputing) when they do grow.
  bool reserve_max_tokens = true;
};

// What became of one submitted request.
struct RequestOutcome {
  size_t index = 0;                 // submission order
  Status status;                    // not ok: rejected or failed (the others went on)
  GenerationResult result;
  int32_t preemptions = 0;
  nlohmann::json to_json() const;
};

struct SchedulerStats {
  int64_t steps = 0;
  int64_t max_running = 0;          // most sequences ever in flight
  int64_t preemptions = 0;
  uint64_t peak_kv_bytes_allocated = 0;
  double peak_kv_waste_percent = 0; // at the step where allocation peaked
  int64_t prefix_hit_tokens = 0;
  double wall_ms = 0;
  int64_t generated_tokens = 0;
  // Steps that only decoded (no prompt chunk): their tokens and their time,
  // planning and sampling included. tokens / time is the decode throughput of
  // the batch, as `tessera bench` reports it for one sequence.
  int64_t decode_step_tokens = 0;
  double decode_step_ms = 0;
  nlohmann::json to_json() const;
};

class Scheduler {
 public:
  using TextCallback = std::function<void(size_t index, std::string_view text)>;
  using DoneCallback = std::function<void(const RequestOutcome&)>;

  Scheduler(Session& session, SchedulerConfig config = {});
  ~Scheduler();

  // Queues a request; returns its index. Requests run when run() is called.
  size_t submit(GenerationRequest request);

  // Runs until every submitted request is finished or rejected. Outcomes are
  // returned in submission order. Fails as a whole only when the model or a
  // plugin fails; a request the cache cannot hold is rejected on its own.
  Result<std::vector<RequestOutcome>> run(const TextCallback& on_text = {}, const DoneCallback& on_done = {});

  const SchedulerStats& stats() const { return stats_; }

 private:
  struct Request;
  Status step(const TextCallback& on_text, const DoneCallback& on_done);
  Status admit();
  void preempt(Request& r);
  void finish(Request& r, Status status, const DoneCallback& on_done);
  uint64_t pool_tokens() const;

  Session& session_;
  SchedulerConfig config_;
  std::vector<std::unique_ptr<Request>> requests_;  // by index
  std::deque<Request*> waiting_;
  std::vector<Request*> running_;                   // admission order
  std::vector<float> logits_;                        // [rows, vocab]
  SchedulerStats stats_;
};

}  // namespace tessera
