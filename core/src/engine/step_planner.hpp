// step_planner.hpp: the "schedule" part of a step (vLLM v1's schedule /
// execute / update): which requests run, with how many tokens each, and the
// memory slots they need.
//
// Iteration-level scheduling (Orca, vLLM): each step takes one token for each
// decoding request first (plus the draft tokens it verifies, when a proposer
// drafted some), then chunks of the prompts still being prefilled, up to
// max_batch_tokens (chunked prefill, so a long prompt never stalls the
// decoders). Waiting requests are admitted while the memory can hold what
// every running request may still grow to (SequenceMemory::can_hold); when it
// runs out of slots anyway, the most recently admitted request is preempted
// by recomputation: its sequence is released and it waits at the front of
// the queue, to be re-admitted with its prompt plus what it had generated.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "engine/request.hpp"
#include "tessera/sequence_memory.hpp"

namespace tessera {

struct SchedulerConfig {
  int32_t max_batch_tokens = 512;  // tokens one forward may take (decode tokens + prefill chunks); >= 1
  int32_t max_running = 256;       // requests in flight at once
  // Admission: reserve room for each request's prompt plus max_tokens (no
  // preemption as long as max_tokens is honest), or, when false, only for the
  // prompt and the next token, as servers that cannot know output lengths do:
  // more requests in flight when max_tokens is a loose bound, at the price of
  // preempting (and recomputing) when they do grow.
  bool reserve_max_tokens = true;
  // Most draft tokens a request verifies in one step (speculative decoding;
  // the proposer may draft fewer).
  int32_t max_draft_tokens = 16;
};

// Proposes draft tokens to follow a decoding request's tokens (speculative
// decoding: a draft model, prompt lookup). The step verifies them all in one
// forward; the output processor keeps the prefix the strategy accepts, and
// the scheduler reports back what happened so a proposer can adapt.
class DraftProposer {
 public:
  virtual ~DraftProposer() = default;
  // Appends at most `max_tokens` tokens to follow `request.tokens()` to
  // `out`. `probs` stays empty when the tokens are certain proposals (greedy
  // drafts, prompt lookup); a proposer that samples its drafts fills it with
  // [out.size(), vocab]: the distribution each token was drawn from, which the
  // verification's rejection sampling needs (draft_verification.hpp).
  virtual Status propose(Request& request, int32_t max_tokens, std::vector<int32_t>& out,
                         std::vector<float>& probs) = 0;
  // The step verified `proposed` of the request's drafts and kept `accepted`.
  virtual void verified(Request& /*request*/, int32_t /*proposed*/, int32_t /*accepted*/) {}
  // A decode step (no prompt chunk) of `requests` requests verifying
  // `drafted` draft tokens in all took `ms` (forward and verification).
  virtual void timed_step(int32_t /*requests*/, int32_t /*drafted*/, double /*ms*/) {}
  // The request ended (finished or failed): whatever was kept for it goes.
  virtual void finished(const Request& /*request*/) {}
};

// The engine's requests: every one by submission order, those waiting (FIFO)
// and those running (in admission order).
struct RequestTable {
  std::vector<std::unique_ptr<Request>> all;
  std::deque<Request*> waiting;
  std::vector<Request*> running;
};

// One request's share of a step.
struct ScheduledRequest {
  Request* request = nullptr;
  int32_t n_tokens = 0;  // from request->n_computed on; the last n_proposed are draft tokens
  int32_t n_logits = 0;  // rows of logits it needs: 0 for a prompt chunk short of the prompt's end
  int32_t n_proposed = 0;
};

struct StepPlan {
  std::vector<ScheduledRequest> items;  // in batch order
  bool decode_only = true;              // no prompt chunk in this step
  // Requests that cannot go on (one needing more memory than exists); the
  // scheduler finishes them with the status.
  std::vector<std::pair<Request*, Status>> failed;
};

struct PlannerStats {
  int64_t max_running = 0;
  int64_t preemptions = 0;
  double draft_ms = 0;  // in the proposer
};

class StepPlanner {
 public:
  // `proposer` may be null (no speculative decoding). `truncates`: whether
  // the memory can drop rejected draft tokens with truncate() (attention
  // layers only); otherwise a checkpoint is taken before each verification.
  StepPlanner(SequenceMemory& memory, int64_t context, SchedulerConfig config, DraftProposer* proposer,
              bool truncates)
      : memory_(memory), context_(context), config_(config), proposer_(proposer), truncates_(truncates) {}

  // Admits, plans and reserves one step. Errors only when the memory plugin
  // fails other than by running out of room.
  Result<StepPlan> plan(RequestTable& requests);

  const PlannerStats& stats() const { return stats_; }

 private:
  Status admit(RequestTable& requests);
  Status draft(Request& request, int32_t budget, ScheduledRequest& item);
  void preempt(RequestTable& requests, Request& request);
  Status reserve(RequestTable& requests, StepPlan& plan);

  SequenceMemory& memory_;
  int64_t context_;
  SchedulerConfig config_;
  DraftProposer* proposer_;
  bool truncates_;
  PlannerStats stats_;
  std::vector<int32_t> draft_;
  std::vector<float> draft_probs_;  // [draft_.size(), vocab] or empty
};

}  // namespace tessera
