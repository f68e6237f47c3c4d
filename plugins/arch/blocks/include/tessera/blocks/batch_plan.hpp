// tessera/blocks/batch_plan.hpp: checks a Batch against the model and the memory, and lays
// out per-row bookkeeping for one forward: positions, sequences, the rows whose
// logits are asked, and for a model with attention layers the block tables.
// Pure host logic; no kernels.
//
// Rows are the batch's tokens in batch.tokens order; a sequence's rows are
// [token_offset, token_offset + n_tokens) and sit at positions n_past + i.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tessera/architecture.hpp"

namespace tessera::blocks {

struct BatchLimits {
  int64_t vocab = 0;              // token ids must lie in [0, vocab)
  int64_t max_context = 0;        // n_past + n_tokens must not exceed it
  bool attention_layers = true;   // false: a model without them (Mamba): no block tables are read
  int32_t block_size = 0;         // of the memory's attention pools: at least 1 where attention_layers
};

// What Model::forward_layers is handed: layers [first, last) of a model of
// n_layer, and the hidden states to run them over. invalid_argument naming
// `who` otherwise.
Status check_layer_range(std::string_view who, int32_t first, int32_t last, int64_t n_layer, const float* hidden);

// Vectors are cleared and refilled on each plan(), so their capacity is reused
// and a steady decode loop does not allocate.
struct BatchPlan {
  std::vector<int32_t> row_pos;                    // [n_rows] position of each token
  std::vector<int32_t> row_seq;                    // [n_rows] index into batch.seqs
  std::vector<std::span<const int32_t>> tables;    // [n_seqs] block table per batch.seqs entry (attention models)
  std::vector<AttentionSeq> attention;             // [n_seqs] what the attention kernel reads (attention models)
  std::vector<int32_t> logit_rows;                 // [batch.logit_rows()] rows whose logits are asked, in output order
                                                   // (each sequence's last n_logits rows)
  int32_t max_position = -1;                       // largest position in the batch

  int64_t n_rows() const { return static_cast<int64_t>(row_pos.size()); }

  // Fills the plan, or explains what is wrong with the batch (bad token id,
  // overlapping or missing rows, slots not reserved with append_slots, ...).
  Status plan(const Batch& batch, const SequenceMemory& memory, const BatchLimits& limits);
};

}  // namespace tessera::blocks
