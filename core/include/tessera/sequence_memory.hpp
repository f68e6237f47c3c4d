// tessera/sequence_memory.hpp: what a model remembers per sequence, and the
// plugins that keep it (family "kvcache").
//
// A model describes its memory per layer (SequenceStateSpec):
//  * attention layers keep K and V for every token. Every memory speaks one
//    layout for them: a pool of fixed-size blocks per layer and, per sequence,
//    a block table mapping logical block i (tokens [i*B, (i+1)*B)) to a
//    physical block. A contiguous cache is the case of one block per sequence
//    with B = the maximum context, so every attention kernel reads one layout.
//    Pool layout per layer (K and V alike), elements of the view's dtype (f32,
//    or f16 to halve the memory and the bytes attention reads):
//      k[n_blocks][block_size][n_kv_head][head_dim]
//    Slot of token position p of a sequence: block = table[p / B], row = p % B.
//  * recurrent layers (Mamba) keep a fixed-size state per sequence, whatever
//    its length: up to kMaxStateParts f32 arrays (the conv window, the SSM
//    state), read and written in place through state().
//
// The memory owns admission: whether a set of sequences can grow to the
// lengths asked (can_hold), and how long one sequence can ever be here. It
// also keeps checkpoints: a sequence's state saved at its current length and
// restored later, which is how a recurrent model goes back (its state cannot
// be truncated) when speculative tokens are rejected.
//
// Thread-safety: bookkeeping calls (create, append, fork, truncate, checkpoint,
// release) are made by one thread, the engine's; kernels read and write views
// concurrently during a forward.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "tessera/half.hpp"
#include "tessera/abi.hpp"
#include "tessera/status.hpp"
#include "tessera/tensor.hpp"

namespace tessera {

using SeqId = int32_t;
using CheckpointId = int32_t;

enum class LayerMemoryKind : uint32_t {
  none = 0,       // the layer remembers nothing between steps
  attention = 1,  // K and V per token
  recurrent = 2,  // a fixed-size state per sequence
};

inline constexpr int kMaxStateParts = 4;

// What one layer remembers per sequence.
struct LayerMemorySpec {
  LayerMemoryKind kind = LayerMemoryKind::none;
  int32_t n_kv_head = 0;      // attention: K and V heads per token
  int32_t head_dim = 0;       // attention: elements per head
  int32_t n_state_parts = 0;  // recurrent: f32 arrays per sequence (<= kMaxStateParts)
  std::array<uint64_t, kMaxStateParts> state_elements{};  // recurrent: f32 elements of each part

  static constexpr LayerMemorySpec attention(int32_t n_kv_head, int32_t head_dim) {
    return {LayerMemoryKind::attention, n_kv_head, head_dim, 0, {}};
  }
  uint64_t state_bytes() const noexcept {
    uint64_t n = 0;
    for (int i = 0; i < n_state_parts && i < kMaxStateParts; ++i) n += state_elements[static_cast<size_t>(i)];
    return n * sizeof(float);
  }
};
static_assert(offsetof(LayerMemorySpec, kind) == 0);
static_assert(offsetof(LayerMemorySpec, n_kv_head) == 4);
static_assert(offsetof(LayerMemorySpec, head_dim) == 8);
static_assert(offsetof(LayerMemorySpec, n_state_parts) == 12);
static_assert(offsetof(LayerMemorySpec, state_elements) == 16);
static_assert(sizeof(LayerMemorySpec) == 48);

// What a model needs remembered per sequence; the memory plugin is sized from it.
struct SequenceStateSpec {
  int64_t max_context = 0;                  // longest sequence the model (or the pipeline) accepts
  std::span<const LayerMemorySpec> layers;  // one per layer; owned by the Model, valid while it lives

  // K and V of one token over all attention layers, at `element_bytes` per value (4 for f32, 2 for f16).
  uint64_t kv_bytes_per_token(uint64_t element_bytes = sizeof(float)) const noexcept {
    uint64_t n = 0;
    for (const LayerMemorySpec& l : layers)
      if (l.kind == LayerMemoryKind::attention) n += 2ull * static_cast<uint64_t>(l.n_kv_head) * l.head_dim;
    return n * element_bytes;
  }
  // Recurrent state of one sequence over all layers.
  uint64_t state_bytes_per_sequence() const noexcept {
    uint64_t n = 0;
    for (const LayerMemorySpec& l : layers)
      if (l.kind == LayerMemoryKind::recurrent) n += l.state_bytes();
    return n;
  }
  bool has(LayerMemoryKind kind) const noexcept {
    for (const LayerMemorySpec& l : layers)
      if (l.kind == kind) return true;
    return false;
  }
  int32_t n_layer() const noexcept { return static_cast<int32_t>(layers.size()); }
};
static_assert(offsetof(SequenceStateSpec, max_context) == 0);
static_assert(offsetof(SequenceStateSpec, layers) == 8);
static_assert(sizeof(SequenceStateSpec) == 24);

// The element types a cache may hold, by their pipeline names ("f32", "f16").
inline bool parse_kv_dtype(std::string_view name, DType* out) noexcept {
  if (name == "f32") return *out = DType::f32, true;
  if (name == "f16") return *out = DType::f16, true;
  return false;
}
inline uint64_t kv_element_bytes(DType dtype) noexcept { return dtype == DType::f16 ? 2 : 4; }

// One attention layer's pools; valid until the next bookkeeping call.
struct KvLayerView {
  int32_t block_size = 0;
  int32_t n_kv_head = 0;
  int32_t head_dim = 0;
  DType dtype = DType::f32;  // of k and v: f32 or f16
  void* k = nullptr;         // [n_blocks, block_size, n_kv_head, head_dim]
  void* v = nullptr;         // [n_blocks, block_size, n_kv_head, head_dim]

  // Typed pools; nullptr when the view holds the other dtype.
  float* k_f32() const noexcept { return dtype == DType::f32 ? static_cast<float*>(k) : nullptr; }
  float* v_f32() const noexcept { return dtype == DType::f32 ? static_cast<float*>(v) : nullptr; }
  uint16_t* k_f16() const noexcept { return dtype == DType::f16 ? static_cast<uint16_t*>(k) : nullptr; }
  uint16_t* v_f16() const noexcept { return dtype == DType::f16 ? static_cast<uint16_t*>(v) : nullptr; }

  int64_t row_stride() const noexcept { return static_cast<int64_t>(n_kv_head) * head_dim; }
  // Offset (in elements) of token position `pos` of the sequence with `table`.
  int64_t slot_offset(std::span<const int32_t> table, int64_t pos) const noexcept {
    const int64_t block = table[static_cast<size_t>(pos / block_size)];
    return (block * block_size + pos % block_size) * row_stride();
  }
};
static_assert(offsetof(KvLayerView, block_size) == 0);
static_assert(offsetof(KvLayerView, dtype) == 12);
static_assert(offsetof(KvLayerView, k) == 16);
static_assert(offsetof(KvLayerView, v) == 24);
static_assert(sizeof(KvLayerView) == 32);

// n values at element `offset` of a K or V pool of the view, written from f32
// (f16 pools round to nearest even) or read as f32.
inline void kv_store(const KvLayerView& view, void* pool, int64_t offset, const float* src, int64_t n) noexcept {
  if (view.dtype == DType::f16) return f32_to_f16_n(src, static_cast<uint16_t*>(pool) + offset, n);
  const float* end = src + n;
  float* dst = static_cast<float*>(pool) + offset;
  while (src != end) *dst++ = *src++;
}
inline void kv_load(const KvLayerView& view, const void* pool, int64_t offset, float* dst, int64_t n) noexcept {
  if (view.dtype == DType::f16) return f16_to_f32_n(static_cast<const uint16_t*>(pool) + offset, dst, n);
  const float* src = static_cast<const float*>(pool) + offset;
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
}

// One recurrent layer's state of one sequence: part i holds the layer's
// state_elements[i] f32 values. Valid until the next bookkeeping call.
struct RecurrentStateView {
  std::array<float*, kMaxStateParts> parts{};
};
static_assert(sizeof(RecurrentStateView) == 32);

struct MemoryStats {
  int64_t blocks_total = 0;       // attention blocks
  int64_t blocks_used = 0;
  uint64_t bytes_allocated = 0;   // bytes held by live sequences (blocks and states)
  uint64_t bytes_live = 0;        // of those, bytes holding live tokens and states
  uint64_t bytes_reserved = 0;    // the whole pool
  int64_t prefix_hit_tokens = 0;  // tokens served from the prefix cache
  int64_t states_total = 0;       // recurrent state slots (sequences and checkpoints)
  int64_t states_used = 0;
};

// A sequence and the length it may reach (admission). seq = -1: one not yet created.
struct MemoryDemand {
  SeqId seq = -1;
  int64_t tokens = 0;
};
static_assert(sizeof(MemoryDemand) == 16);

class SequenceMemory : public PluginObject {
 public:
  // Size the memory for `spec`. Called once before any other call. Required.
  virtual Status configure(const SequenceStateSpec& spec) noexcept = 0;

  // --- Sequences
  // A new, empty sequence (its recurrent state zeroed). out_of_memory when none can be made now.
  virtual Result<SeqId> create_sequence() noexcept = 0;
  // Frees the sequence with its checkpoints.
  virtual void release(SeqId seq) noexcept = 0;
  // Make room for `n` more tokens at the end of `seq` (the model then writes
  // their K/V into the slots and advances the recurrent state in place).
  // out_of_memory when the pool cannot hold them; the sequence is left unchanged then.
  virtual Status append_slots(SeqId seq, int32_t n) noexcept = 0;
  // A new sequence with seq's tokens (shared copy-on-write) and a copy of its state.
  virtual Result<SeqId> fork(SeqId seq) noexcept = 0;
  // Drop tokens from the end so that `new_length` remain. Only memories whose
  // layers are all attention (or none) can: unsupported otherwise (restore a
  // checkpoint instead).
  virtual Status truncate(SeqId seq, int32_t new_length) noexcept = 0;
  virtual int32_t length(SeqId seq) const noexcept = 0;

  // --- Views the model reads and writes during forward()
  virtual std::span<const int32_t> block_table(SeqId seq) const noexcept = 0;
  // An attention layer's pools; an empty view (k == nullptr) for other layers.
  virtual KvLayerView layer(int32_t layer) noexcept = 0;
  // A recurrent layer's state of `seq`; all parts nullptr for other layers.
  virtual RecurrentStateView state(SeqId seq, int32_t layer) noexcept = 0;

  // --- Admission
  // The longest one sequence can ever be in this memory (the context, or
  // less when the pool is smaller): a longer request can never run.
  virtual int64_t max_sequence_tokens() const noexcept = 0;
  // Whether every demand can be met at once from the memory now free: each
  // running sequence growing to its `tokens` (counting only what it does not
  // hold yet) and each new one (seq = -1) being created and growing to its
  // `tokens`. The engine admits a request only while this holds.
  virtual bool can_hold(std::span<const MemoryDemand> demands) const noexcept = 0;
  virtual MemoryStats stats() const noexcept = 0;

  // --- Checkpoints
  // Saves seq's state at its current length. out_of_memory when no room is left.
  virtual Result<CheckpointId> checkpoint(SeqId seq) noexcept = 0;
  // Returns seq to the length and state it had at `checkpoint`, which stays
  // valid (it may be restored again) until dropped or the sequence is released.
  virtual Status restore(SeqId seq, CheckpointId checkpoint) noexcept = 0;
  virtual void drop_checkpoint(SeqId seq, CheckpointId checkpoint) noexcept = 0;

  // --- Prefix cache (optional; attention-only memories)
  // Before a sequence's first append: reuse cached blocks holding a prefix of
  // `tokens`; returns how many leading tokens are already present (the
  // sequence's length becomes that). Default: none.
  virtual int32_t reuse_prefix(SeqId /*seq*/, std::span<const int32_t> /*tokens*/) noexcept { return 0; }
  // Tell the memory which tokens now fill seq's slots [0, tokens.size()) so
  // full blocks can be published for reuse. Default: ignored.
  virtual void record_tokens(SeqId /*seq*/, std::span<const int32_t> /*tokens*/) noexcept {}

#if TESSERA_ABI_MINOR >= 5
  // Positions at which this memory can keep a prefix for reuse only if a
  // step ends there (a recurrent model's state snapshots: the state exists
  // only after a forward's last token). The engine then ends prompt chunks
  // on multiples of it. 0: no such positions (a block cache publishes every
  // full block whatever the chunks). Default: 0.
  virtual int32_t prefix_granularity() const noexcept { return 0; }
#endif
};

}  // namespace tessera
