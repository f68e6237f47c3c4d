// tessera/attention.hpp: attention kernels over block-table KV views.
//
// The model writes the K/V of this step's tokens into their cache slots first,
// then calls forward(). For each sequence s, its query i sits at position
// n_past + i and attends causally to positions [0, n_past + i]. GQA: query head
// h reads KV head h / (n_head / n_kv_head). Causal masking and GQA are the
// kernel's job. forward() is called by one thread at a time per kernel object
// (the kernel parallelizes inside), so a kernel may keep scratch between calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "tessera/abi.hpp"
#include "tessera/sequence_memory.hpp"
#include "tessera/status.hpp"

namespace tessera {

struct AttentionSeq {
  std::span<const int32_t> block_table;
  int32_t n_past = 0;   // tokens of this sequence in the cache before this step
  int32_t n_query = 0;  // tokens of this sequence in this step
  int32_t q_row = 0;    // index of its first query row in q/out
};
static_assert(offsetof(AttentionSeq, block_table) == 0);
static_assert(offsetof(AttentionSeq, n_past) == 16);
static_assert(offsetof(AttentionSeq, q_row) == 24);
static_assert(sizeof(AttentionSeq) == 32);

struct AttentionArgs {
  const float* q = nullptr;  // [n_rows, n_head, head_dim]
  float* out = nullptr;      // [n_rows, n_head, head_dim]
  int32_t n_head = 0;
  int32_t n_kv_head = 0;
  int32_t head_dim = 0;
  float scale = 0.0f;        // usually 1 / sqrt(head_dim)
  KvLayerView kv;
  std::span<const AttentionSeq> seqs;
};
static_assert(offsetof(AttentionArgs, q) == 0);
static_assert(offsetof(AttentionArgs, n_head) == 16);
static_assert(offsetof(AttentionArgs, scale) == 28);
static_assert(offsetof(AttentionArgs, kv) == 32);
static_assert(offsetof(AttentionArgs, seqs) == 64);
static_assert(sizeof(AttentionArgs) == 80);

class AttentionKernel : public PluginObject {
 public:
  virtual Status forward(const AttentionArgs& args) noexcept = 0;
  // Whether the kernel can read a cache with this block size. A kernel that
  // cannot returns false with a reason; the pipeline then refuses the pairing.
  virtual bool supports_block_size(int32_t /*block_size*/, std::string* /*why*/) const noexcept { return true; }
};

}  // namespace tessera
