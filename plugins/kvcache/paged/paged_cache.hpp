// Paged KV cache: fixed-size blocks shared by reference, copy-on-write, and a
// prefix cache over chained block hashes (the design of vLLM's block manager).
//
// A thin SequenceMemory over parts that each do one job:
//   BlockManager     sequences, block tables, ref counts, LRU, prefix keys (host logic)
//   BlockStorage     the K/V pools the attention kernels read
//   RecurrentStates  recurrent layers' state, a slot per sequence or checkpoint
// The manager calls the storage only to copy a block's rows on copy-on-write.
// See docs/paged-kv.md for the rules and what the stats mean.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>

#include "block_manager.hpp"
#include "block_storage.hpp"
#include "checkpoints.hpp"
#include "memory_layout.hpp"
#include "recurrent_states.hpp"
#include "state_snapshots.hpp"
#include "tessera/params.hpp"
#include "tessera/sequence_memory.hpp"

namespace tessera::plugins {

class PagedKvCache final : public SequenceMemory {
 public:
  // Parameters: block_size (tokens per block, 1..4096), memory (pool bytes for
  // all layers, K and V, and recurrent states), max_sequences, dtype,
  // checkpoints. See kPagedParams in the entry.
  explicit PagedKvCache(const ParamValues& params);

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
  int64_t max_sequence_tokens() const noexcept override;
  bool can_hold(std::span<const MemoryDemand> demands) const noexcept override;
  MemoryStats stats() const noexcept override;
  Result<CheckpointId> checkpoint(SeqId seq) noexcept override;
  Status restore(SeqId seq, CheckpointId checkpoint) noexcept override;
  void drop_checkpoint(SeqId seq, CheckpointId checkpoint) noexcept override;
  int32_t reuse_prefix(SeqId seq, std::span<const int32_t> tokens) noexcept override;
  void record_tokens(SeqId seq, std::span<const int32_t> tokens) noexcept override;
  int32_t prefix_granularity() const noexcept override;

  int32_t block_size() const { return block_size_; }
  // Null before configure(); exposed for tests and diagnostics.
  const paged::BlockManager* manager() const { return manager_.get(); }

 private:
  Status not_configured(const char* call) const;

  // Requested by the pipeline.
  int32_t block_size_ = 16;
  int64_t memory_ = 0;
  int64_t max_sequences_ = 256;
  DType dtype_ = DType::f32;  // of every K and V element
  int64_t checkpoint_slots_ = 0;  // recurrent state slots beyond one per sequence
  memory::SnapshotSettings snapshot_settings_;

  // Set by configure().
  memory::MemoryLayout layout_;
  int64_t max_context_ = 0;
  uint64_t block_bytes_ = 0;  // one block, all attention layers, K and V
  std::unique_ptr<paged::BlockStorage> storage_;
  std::unique_ptr<paged::BlockManager> manager_;
  memory::RecurrentStates states_;
  std::unordered_map<SeqId, int32_t> state_slot_;  // recurrent models: each sequence's state slot
  memory::CheckpointTable checkpoints_;
  // The prefix cache of a model whose layers are all recurrent (the block
  // manager's serves attention layers).
  memory::StateSnapshots snapshots_;
  int64_t snapshot_hit_tokens_ = 0;
};

}  // namespace tessera::plugins
