// scheduler.hpp: continuous batching over one Model and one SequenceMemory.
//
// Every generation, one request or many, runs here, so a request run alone
// and in a batch follow one code path. Each step has three parts, each
// testable alone (vLLM v1's shape):
//   schedule  StepPlanner: admit, choose each request's tokens (and drafts to
//             verify), reserve memory, preempt when it runs out;
//   execute   StepExecutor: one Batch, one Model::forward;
//   update    OutputProcessor: tokens chosen or drafts verified, memory
//             rolled back, stop conditions, streaming, metrics.
// A request that could never fit (its prompt not shorter than the context,
// or prompt + max_tokens beyond what one sequence can hold) is rejected on
// its own at submission; the others are unharmed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/output_processor.hpp"
#include "engine/session.hpp"
#include "engine/speculation_stats.hpp"
#include "engine/step_executor.hpp"
#include "engine/step_planner.hpp"

namespace tessera {

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
  SpeculationStats speculation;
  nlohmann::json to_json() const;
};

class Scheduler {
 public:
  using TextCallback = OutputProcessor::TextCallback;
  using DoneCallback = OutputProcessor::DoneCallback;

  // `proposer` drafts tokens for decoding requests to verify: the session's
  // own ([speculative]) when null; none when neither has one.
  Scheduler(Session& session, SchedulerConfig config = {}, DraftProposer* proposer = nullptr);
  ~Scheduler();

  // Queues a request; returns its index. Requests run when run() or step()
  // is called. A request the engine can never serve (a prompt not shorter
  // than the context, one longer than the memory holds) is done at once:
  // done(index) is true and outcome(index) says why.
  size_t submit(GenerationRequest request);

  // Runs until every submitted request is finished or rejected. Outcomes are
  // returned in submission order. Fails as a whole only when the model or a
  // plugin fails; a request the memory cannot hold is rejected on its own.
  Result<std::vector<RequestOutcome>> run(const TextCallback& on_text = {}, const DoneCallback& on_done = {});

  // --- Online use (a server): submit, cancel and forget between steps.
  // Whether any request waits or runs.
  bool busy() const { return !requests_.waiting.empty() || !requests_.running.empty(); }
  // One step of every request in flight (run() is these until none is left).
  Status step(const TextCallback& on_text, const DoneCallback& on_done);
  // Ends a request now, waiting or running: its memory is freed at once and
  // on_done gets its outcome, stop reason "cancelled", the text so far.
  // False when the request had already ended.
  bool cancel(size_t index, const DoneCallback& on_done = {});
  bool done(size_t index) const { return requests_.all.at(index)->done; }
  const RequestOutcome& outcome(size_t index) const { return requests_.all.at(index)->outcome; }
  // Drops an ended request's record, so that a server's memory does not grow
  // with the requests it has served. Its index is not reused.
  void forget(size_t index);
  size_t waiting() const { return requests_.waiting.size(); }
  size_t running() const { return requests_.running.size(); }

  // Kept current step by step; wall_ms and the requests that turned
  // speculation off are filled in by run().
  const SchedulerStats& stats() const { return stats_; }

 private:
  Status check_config() const;
  void note_memory();
  // Figures the planner and the memory keep, into stats_.
  void refresh_stats();
  // What the step's drafts achieved and cost, to the proposer (and stats).
  void report_to_proposer(const StepPlan& plan, double executed_ms);

  Session& session_;
  SchedulerConfig config_;
  DraftProposer* proposer_;
  RequestTable requests_;
  StepPlanner planner_;
  StepExecutor executor_;
  OutputProcessor outputs_;
  SchedulerStats stats_;
};

}  // namespace tessera
