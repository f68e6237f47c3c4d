#include "dequantize_fast.hpp"

#include "blocks.hpp"
#include "tessera/half.hpp"
#include "tessera/simd_clones.hpp"

namespace tessera::ggml {
namespace {

TESSERA_SIMD_CLONES
void q4_0_rows(const BlockQ4_0* __restrict x, float* __restrict y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, y += kBlock) {
    const float d = f16_to_f32(x[b].d);
    const uint8_t* qs = x[b].qs;
#pragma omp simd
    for (int j = 0; j < kBlock / 2; ++j) {
      y[j] = d * static_cast<float>((qs[j] & 0x0F) - 8);
      y[j + kBlock / 2] = d * static_cast<float>((qs[j] >> 4) - 8);
    }
  }
}

TESSERA_SIMD_CLONES
void q4_1_rows(const BlockQ4_1* __restrict x, float* __restrict y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, y += kBlock) {
    const float d = f16_to_f32(x[b].d);
    const float m = f16_to_f32(x[b].m);
    const uint8_t* qs = x[b].qs;
#pragma omp simd
    for (int j = 0; j < kBlock / 2; ++j) {
      y[j] = d * static_cast<float>(qs[j] & 0x0F) + m;
      y[j + kBlock / 2] = d * static_cast<float>(qs[j] >> 4) + m;
    }
  }
}

TESSERA_SIMD_CLONES
void q8_0_rows(const BlockQ8_0* __restrict x, float* __restrict y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, y += kBlock) {
    const float d = f16_to_f32(x[b].d);
    const int8_t* qs = x[b].qs;
#pragma omp simd
    for (int j = 0; j < kBlock; ++j) y[j] = d * static_cast<float>(qs[j]);
  }
}

}  // namespace

bool dequantize_row_fast(DType type, const void* x, float* y, int64_t n) {
  const int64_t n_blocks = n / kBlock;
  switch (type) {
    case DType::q4_0: q4_0_rows(static_cast<const BlockQ4_0*>(x), y, n_blocks); return true;
    case DType::q4_1: q4_1_rows(static_cast<const BlockQ4_1*>(x), y, n_blocks); return true;
    case DType::q8_0: q8_0_rows(static_cast<const BlockQ8_0*>(x), y, n_blocks); return true;
    default: return false;
  }
}

}  // namespace tessera::ggml
