// Contiguous memory: one block per sequence, the block as long as the context.
//
// Every sequence owns one slot of the pool for its whole life, sized for the
// maximum context, so no bookkeeping is needed while it grows. The price is
// memory: a sequence of 10 tokens holds a block for max_context tokens, and
// stats() reports that waste honestly (bytes_allocated vs bytes_live).
//
// Pool layout per attention layer (K and V alike), as sequence_memory.hpp
// prescribes:
//   k[max_sequences][max_context][n_kv_head][head_dim]
// A sequence's block table is the single entry {its slot}. Recurrent layers'
// state lives in state slots: one per sequence, plus `checkpoints` more for
// saved states, plus `prefix_snapshots` for the prefix cache of a model
// whose layers are all recurrent (state_snapshots.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "checkpoints.hpp"
#include "memory_layout.hpp"
#include "recurrent_states.hpp"
#include "state_snapshots.hpp"
#include "tessera/params.hpp"
#include "tessera/sequence_memory.hpp"

namespace tessera::plugins {

class ContiguousKvCache final : public SequenceMemory {
 public:
  // Parameters: max_sequences (>= 1), max_context (0 = the model's), memory
  // (byte cap on the pools, 0 = none), dtype, checkpoints. See
  // kContiguousParams in the entry.
  explicit ContiguousKvCache(const ParamValues& params);

  Status configure(const SequenceStateSpec& spec) noexcept override;
  Result<SeqId> create_sequence() noexcept override;
  void release(SeqId seq) noexcept override;
  Status append_slots(SeqId seq, int32_t n) noexcept override;
  Result<SeqId> fork(SeqId seq) noexcept override;
  Status truncate(SeqId seq, int32_t new_length) noexcept override;
  int32_t length(SeqId seq) const noexcept override;
  std::span<const int32_t> block_table(SeqId seq) const noexcept override;
  KvLayerView layer(int32_t layer) noexcept override;
  RecurrentStateView state(SeqId seq, int32_t layer) noexcept override;
  int64_t max_sequence_tokens() const noexcept override { return configured_ ? context_ : 0; }
  bool can_hold(std::span<const MemoryDemand> demands) const noexcept override;
  MemoryStats stats() const noexcept override;
  Result<CheckpointId> checkpoint(SeqId seq) noexcept override;
  Status restore(SeqId seq, CheckpointId checkpoint) noexcept override;
  void drop_checkpoint(SeqId seq, CheckpointId checkpoint) noexcept override;
  int32_t reuse_prefix(SeqId seq, std::span<const int32_t> tokens) noexcept override;
  void record_tokens(SeqId seq, std::span<const int32_t> tokens) noexcept override;
  int32_t prefix_granularity() const noexcept override;

  int32_t context() const { return context_; }

 private:
  struct Sequence {
    int32_t slot = 0;         // the block table: one entry, the sequence's block
    int32_t length = 0;
    int32_t state_slot = -1;  // its recurrent state (-1: the model has none)
  };

  Sequence* find(SeqId seq);
  const Sequence* find(SeqId seq) const;
  // A free slot index, or -1 when every slot is taken.
  int32_t take_free_slot();
  SeqId next_sequence_id();

  // Requested by the pipeline.
  int64_t max_sequences_ = 1;
  int64_t requested_context_ = 0;  // 0 = the model's
  int64_t memory_cap_ = 0;         // 0 = no cap
  DType dtype_ = DType::f32;       // of every K and V element
  int64_t checkpoint_slots_ = 0;   // recurrent state slots beyond one per sequence
  memory::SnapshotSettings snapshot_settings_;

  // Set by configure().
  bool configured_ = false;
  memory::MemoryLayout layout_;
  int32_t context_ = 0;                  // block_size = tokens per sequence
  std::vector<HostBuffer> k_pools_;      // [n_attention_layers] of [max_sequences, context, n_kv_head, head_dim]
  std::vector<HostBuffer> v_pools_;      // same
  std::vector<bool> slot_used_;          // [max_sequences]
  memory::RecurrentStates states_;
  memory::CheckpointTable checkpoints_;
  memory::StateSnapshots snapshots_;  // off unless every layer is recurrent
  int64_t prefix_hit_tokens_ = 0;
  std::unordered_map<SeqId, Sequence> sequences_;  // node-stable: block_table spans stay valid
  SeqId next_id_ = 0;
};

}  // namespace tessera::plugins
