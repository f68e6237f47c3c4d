// The inner loops of the flash kernel, kept apart so that they can be compiled
// for several instruction sets (flash_tile_kernels.cpp, tessera/isa.hpp) while the
// driver stays portable. Each loop runs along a contiguous axis with no
// reduction across lanes, so the compiler vectorizes it without -ffast-math.
#pragma once

#include <cstdint>
#include <span>

#include "tessera/sequence_memory.hpp"

namespace tessera::plugins::flash {

// Copies keys [first, first + n) of one KV head into a tile:
//   kt[head_dim][tile]  (K transposed, so scores vectorize along keys)
//   v [tile][head_dim]
// Each key's slot comes from the block table, so tiles need not align with blocks.
void gather_tile(const KvLayerView& kv, std::span<const int32_t> table, int32_t kv_head, int64_t first,
                 int32_t n, int32_t tile, float* kt, float* v);

// s[t] = sum_d q[d] * kt[d][t] for t < n; q is pre-scaled. kt has row stride `tile`.
void tile_scores(const float* q, const float* kt, int32_t head_dim, int32_t tile, int32_t n, float* s);

// One online-softmax step for one query over n scores:
//   m' = max(m, max s);  p = exp(s - m');  l = l * exp(m - m') + sum p;
//   acc = acc * exp(m - m') + sum_t p[t] * v[t]
// s is overwritten with p. acc is [head_dim], v is [tile][head_dim].
void online_softmax_update(float* s, int32_t n, const float* v, int32_t head_dim, float* m, float* l,
                           float* acc);

}  // namespace tessera::plugins::flash
