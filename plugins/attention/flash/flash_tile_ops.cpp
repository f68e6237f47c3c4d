#include "flash_tile_ops.hpp"

#include <algorithm>
#include <cmath>

#include "tessera/simd_clones.hpp"

namespace tessera::plugins::flash {
// The clones live in an anonymous namespace (tessera/simd_clones.hpp); the
// public functions at the end forward to them.
namespace {

TESSERA_SIMD_CLONES
void gather_tile_impl(const KvLayerView& kv, std::span<const int32_t> table, int32_t kv_head, int64_t first,
                 int32_t n, int32_t tile, float* kt, float* v) {
  const int64_t D = kv.head_dim;
  for (int32_t t = 0; t < n; ++t) {
    const int64_t offset = kv.slot_offset(table, first + t) + kv_head * D;
    float* v_dst = v + static_cast<int64_t>(t) * D;  // [head_dim]
    if (kv.dtype == DType::f16) {
      // The K row is widened into the V row's place first, transposed, then
      // overwritten by the widened V row: no scratch beyond the tile.
      f16_to_f32_n(kv.k_f16() + offset, v_dst, D);
      for (int64_t d = 0; d < D; ++d) kt[d * tile + t] = v_dst[d];
      f16_to_f32_n(kv.v_f16() + offset, v_dst, D);
      continue;
    }
    const float* k_row = kv.k_f32() + offset;  // [head_dim]
    const float* v_row = kv.v_f32() + offset;  // [head_dim]
    for (int64_t d = 0; d < D; ++d) kt[d * tile + t] = k_row[d];
    std::copy(v_row, v_row + D, v_dst);
  }
}

TESSERA_SIMD_CLONES
void tile_scores_impl(const float* __restrict q, const float* __restrict kt, int32_t head_dim, int32_t tile, int32_t n,
                 float* __restrict s) {
  for (int32_t t = 0; t < n; ++t) s[t] = 0.0f;
  for (int32_t d = 0; d < head_dim; ++d) {
    const float qd = q[d];
    const float* __restrict k_row = kt + static_cast<int64_t>(d) * tile;  // key d-components of the tile
    for (int32_t t = 0; t < n; ++t) s[t] += qd * k_row[t];
  }
}

TESSERA_SIMD_CLONES
void online_softmax_update_impl(float* __restrict s, int32_t n, const float* __restrict v, int32_t head_dim,
                           float* m, float* l, float* __restrict acc) {
  float tile_max = s[0];
  for (int32_t t = 1; t < n; ++t) tile_max = std::max(tile_max, s[t]);
  const float m_new = std::max(*m, tile_max);
  // exp(-inf) = 0 on the first tile, where acc and l are still zero anyway.
  const float correction = std::exp(*m - m_new);

  float tile_sum = 0.0f;
  for (int32_t t = 0; t < n; ++t) {
    s[t] = std::exp(s[t] - m_new);
    tile_sum += s[t];
  }
  *l = *l * correction + tile_sum;
  *m = m_new;

  if (correction != 1.0f) {
    for (int32_t d = 0; d < head_dim; ++d) acc[d] *= correction;
  }
  for (int32_t t = 0; t < n; ++t) {
    const float p = s[t];
    const float* __restrict v_row = v + static_cast<int64_t>(t) * head_dim;
    for (int32_t d = 0; d < head_dim; ++d) acc[d] += p * v_row[d];
  }
}

}  // namespace

void gather_tile(const KvLayerView& kv, std::span<const int32_t> table, int32_t kv_head, int64_t first, int32_t n,
                 int32_t tile, float* kt, float* v) {
  gather_tile_impl(kv, table, kv_head, first, n, tile, kt, v);
}

void tile_scores(const float* q, const float* kt, int32_t head_dim, int32_t tile, int32_t n, float* s) {
  tile_scores_impl(q, kt, head_dim, tile, n, s);
}

void online_softmax_update(float* s, int32_t n, const float* v, int32_t head_dim, float* m, float* l, float* acc) {
  online_softmax_update_impl(s, n, v, head_dim, m, l, acc);
}

}  // namespace tessera::plugins::flash
