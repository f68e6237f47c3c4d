// step_executor.hpp: the "execute" part of a step: the planned requests'
// tokens as one Batch, one Model::forward, the rows of logits they asked for.
#pragma once

#include <span>
#include <vector>

#include "backend/cpu/thread_governor.hpp"
#include "engine/step_planner.hpp"
#include "tessera/architecture.hpp"

namespace tessera {

class StepExecutor {
 public:
  // `threads` (optional) chooses each step's thread count.
  StepExecutor(Model& model, SequenceMemory& memory, ThreadGovernor* threads = nullptr)
      : model_(model), memory_(memory), threads_(threads) {}

  // Runs the plan's items in one forward. Afterwards logits(i) holds item i's
  // n_logits rows [n_logits, vocab_size].
  Status execute(const StepPlan& plan);
  std::span<float> logits(size_t item);

 private:
  Model& model_;
  SequenceMemory& memory_;
  ThreadGovernor* threads_;
  std::vector<int32_t> tokens_;
  std::vector<BatchSeq> seqs_;
  std::vector<size_t> first_row_;  // per item
  size_t rows_ = 0;                // this step's rows of logits
  std::vector<float> logits_;      // [rows, vocab]
};

}  // namespace tessera
