// flash_tile_kernels.cpp: the flash kernel's inner loops, compiled once per
// instruction-set level (tessera_isa_variants in CMakeLists.txt);
// flash_tile_ops.cpp picks a level.
#include <algorithm>
#include <cmath>

#include "flash_tile_ops.hpp"
#include "tessera/half.hpp"

namespace tessera::plugins::flash::TESSERA_ISA_NAMESPACE {

namespace {

// f16 rows widened with F16C where this level has it.
void widen(const uint16_t* src, float* dst, int64_t n) {
#if defined(__F16C__) && defined(__AVX__)
  f16c::f16_to_f32_n(src, dst, n);
#else
  f16_to_f32_n(src, dst, n);
#endif
}

}  // namespace

void gather_tile(const KvLayerView& kv, std::span<const int32_t> table, int32_t kv_head, int64_t first,
                 int32_t n, int32_t tile, float* kt, float* v) {
  const int64_t D = kv.head_dim;
  for (int32_t t = 0; t < n; ++t) {
    const int64_t offset = kv.slot_offset(table, first + t) + kv_head * D;
    float* v_dst = v + static_cast<int64_t>(t) * D;  // [head_dim]
    if (kv.dtype == DType::f16) {
      // The K row is widened into the V row's place first, transposed, then
      // overwritten by the widened V row: no scratch beyond the tile.
      widen(kv.k_f16() + offset, v_dst, D);
      for (int64_t d = 0; d < D; ++d) kt[d * tile + t] = v_dst[d];
      widen(kv.v_f16() + offset, v_dst, D);
      continue;
    }
    const float* k_row = kv.k_f32() + offset;  // [head_dim]
    const float* v_row = kv.v_f32() + offset;  // [head_dim]
    for (int64_t d = 0; d < D; ++d) kt[d * tile + t] = k_row[d];
    std::copy(v_row, v_row + D, v_dst);
  }
}

void tile_scores(const float* __restrict q, const float* __restrict kt, int32_t head_dim, int32_t tile, int32_t n,
                 float* __restrict s) {
  for (int32_t t = 0; t < n; ++t) s[t] = 0.0f;
  for (int32_t d = 0; d < head_dim; ++d) {
    const float qd = q[d];
    const float* __restrict k_row = kt + static_cast<int64_t>(d) * tile;  // key d-components of the tile
    for (int32_t t = 0; t < n; ++t) s[t] += qd * k_row[t];
  }
}

void online_softmax_update(float* __restrict s, int32_t n, const float* __restrict v, int32_t head_dim,
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

}  // namespace tessera::plugins::flash::TESSERA_ISA_NAMESPACE
