// tessera/kv_cache.hpp: sequence memory (the KV cache) as blocks mapped by block tables.
//
// Every cache speaks one layout: a pool of fixed-size blocks per layer and, per
// sequence, a block table mapping logical block i (tokens [i*B, (i+1)*B)) to a
// physical block. A contiguous cache is the case of one block per sequence with
// B = the maximum context, so every attention kernel reads one layout.
//
// Pool layout per layer (K and V alike), elements of the view's dtype (f32, or
// f16 to halve the memory and the bytes attention reads):
//   k[n_blocks][block_size][n_kv_head][head_dim]
// Slot of token position p of a sequence: block = table[p / B], row = p % B.
// Every attention kernel reads both dtypes; writers (the architecture) convert
// with tessera/half.hpp, rounding to nearest even.
//
// Thread-safety: bookkeeping calls (create, append, fork, truncate, release) are
// made by one thread, the engine's; attention kernels read views concurrently.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "tessera/half.hpp"
#include "tessera/plugin.hpp"
#include "tessera/status.hpp"
#include "tessera/tensor.hpp"

namespace tessera {

using SeqId = int32_t;

// What a model needs remembered per sequence; the memory plugin is sized from it.
struct SequenceStateSpec {
  int32_t n_layer = 0;
  int32_t n_kv_head = 0;        // Transformer: K and V per layer per token
  int32_t head_dim = 0;
  int64_t max_context = 0;      // longest sequence the model accepts
  uint64_t fixed_bytes_per_sequence = 0;  // Mamba: conv + SSM state, independent of length

  // K and V of one token over all layers, at `element_bytes` per value (4 for f32, 2 for f16).
  uint64_t kv_bytes_per_token(uint64_t element_bytes = sizeof(float)) const {
    return 2ull * static_cast<uint64_t>(n_layer) * n_kv_head * head_dim * element_bytes;
  }
};

// The element types a cache may hold, by their pipeline names ("f32", "f16").
inline bool parse_kv_dtype(std::string_view name, DType* out) {
  if (name == "f32") return *out = DType::f32, true;
  if (name == "f16") return *out = DType::f16, true;
  return false;
}
inline uint64_t kv_element_bytes(DType dtype) { return dtype == DType::f16 ? 2 : 4; }

// One layer's pools; valid until the next bookkeeping call.
struct KvLayerView {
  int32_t block_size = 0;
  int32_t n_kv_head = 0;
  int32_t head_dim = 0;
  DType dtype = DType::f32;  // of k and v: f32 or f16
  void* k = nullptr;         // [n_blocks, block_size, n_kv_head, head_dim]
  void* v = nullptr;         // [n_blocks, block_size, n_kv_head, head_dim]

  // Typed pools; nullptr when the view holds the other dtype.
  float* k_f32() const { return dtype == DType::f32 ? static_cast<float*>(k) : nullptr; }
  float* v_f32() const { return dtype == DType::f32 ? static_cast<float*>(v) : nullptr; }
  uint16_t* k_f16() const { return dtype == DType::f16 ? static_cast<uint16_t*>(k) : nullptr; }
  uint16_t* v_f16() const { return dtype == DType::f16 ? static_cast<uint16_t*>(v) : nullptr; }

  int64_t row_stride() const { return static_cast<int64_t>(n_kv_head) * head_dim; }
  // Offset (in elements) of token position `pos` of the sequence with `table`.
  int64_t slot_offset(std::span<const int32_t> table, int64_t pos) const {
    const int64_t block = table[static_cast<size_t>(pos / block_size)];
    return (block * block_size + pos % block_size) * row_stride();
  }
};

// n values at element `offset` of a K or V pool of the view, written from f32
// (f16 pools round to nearest even) or read as f32.
inline void kv_store(const KvLayerView& view, void* pool, int64_t offset, const float* src, int64_t n) {
  if (view.dtype == DType::f16) return f32_to_f16_n(src, static_cast<uint16_t*>(pool) + offset, n);
  const float* end = src + n;
  float* dst = static_cast<float*>(pool) + offset;
  while (src != end) *dst++ = *src++;
}
inline void kv_load(const KvLayerView& view, const void* pool, int64_t offset, float* dst, int64_t n) {
  if (view.dtype == DType::f16) return f16_to_f32_n(static_cast<const uint16_t*>(pool) + offset, dst, n);
  const float* src = static_cast<const float*>(pool) + offset;
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
}

struct KvStats {
  int64_t blocks_total = 0;
  int64_t blocks_used = 0;
  uint64_t bytes_allocated = 0;   // bytes of blocks held by live sequences
  uint64_t bytes_live = 0;        // bytes holding live tokens
  uint64_t bytes_reserved = 0;    // the whole pool
  int64_t prefix_hit_tokens = 0;  // tokens served from the prefix cache
};

class KvCache : public PluginObject {
 public:
  // Size the pools for `spec`. Called once before any other call. Required.
  virtual Status configure(const SequenceStateSpec& spec) noexcept = 0;
  // A new, empty sequence. out_of_memory when none can be made now.
  virtual Result<SeqId> create_sequence() noexcept = 0;
  virtual void release(SeqId seq) noexcept = 0;
  // Make room for `n` more tokens at the end of `seq` (the model then writes
  // their K/V into the slots). out_of_memory when the pool cannot hold them;
  // the sequence is left unchanged then.
  virtual Status append_slots(SeqId seq, int32_t n) noexcept = 0;
  // A new sequence sharing seq's tokens copy-on-write.
  virtual Result<SeqId> fork(SeqId seq) noexcept = 0;
  // Drop tokens from the end so that `new_length` remain (speculative rollback).
  virtual Status truncate(SeqId seq, int32_t new_length) noexcept = 0;
  virtual int32_t length(SeqId seq) const noexcept = 0;
  virtual std::span<const int32_t> block_table(SeqId seq) const noexcept = 0;
  virtual KvLayerView layer(int32_t layer) noexcept = 0;
  virtual KvStats stats() const noexcept = 0;

  // Optional prefix cache. Before a sequence's first append: reuse cached blocks
  // holding a prefix of `tokens`; returns how many leading tokens are already
  // present (the sequence's length becomes that). Default: none.
  virtual int32_t reuse_prefix(SeqId /*seq*/, std::span<const int32_t> /*tokens*/) noexcept { return 0; }
  // Tell the cache which tokens now fill seq's slots [0, tokens.size()) so full
  // blocks can be published for reuse. Default: ignored.
  virtual void record_tokens(SeqId /*seq*/, std::span<const int32_t> /*tokens*/) noexcept {}
};

}  // namespace tessera
