// block_decode.cuh: one "unit" (32 consecutive values of a row) of a stored
// weight row, decoded to f32 on the device. The layouts are ggml's, the same
// the CPU reference (plugins/quant/ggml/reference.cpp) decodes:
//   q4_0  [d f16][16 B nibbles]            v = (q - 8) d
//   q4_1  [d f16][m f16][16 B nibbles]     v = q d + m
//   q5_0  [d][qh u32][16 B]                v = ((q | h << 4) - 16) d
//   q5_1  [d][m][qh u32][16 B]             v = (q | h << 4) d + m
//   q8_0  [d][32 int8]                     v = q d
//   q4_k  super-block of 256: [d][dmin][12 B 6-bit scales/mins][128 B nibbles]
//   q5_k  as q4_k plus [32 B high bits] before the nibbles
//   q6_k  [128 B low 4 bits][64 B high 2 bits][16 int8 scales][d]
// Element j < 16 of a 32-block is the low nibble of byte j, j >= 16 the high
// nibble of byte j - 16; a K-quant super-block's 64-value chunk c holds
// sub-block 2c in the low nibbles and 2c + 1 in the high ones.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "kernels.hpp"

namespace tessera::transformer::cuda {

__device__ __forceinline__ float load_f16(const uint8_t* p) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(p[0] | (p[1] << 8))));
}

__device__ __forceinline__ uint32_t load_u32(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}

// The 6-bit scale and min of sub-block s (0..7) of a Q4_K/Q5_K super-block.
__device__ __forceinline__ void kquant_scale_min(const uint8_t* scales, int s, int& scale, int& min) {
  if (s < 4) {
    scale = scales[s] & 63;
    min = scales[s + 4] & 63;
  } else {
    scale = (scales[s + 4] & 0xF) | ((scales[s - 4] >> 6) << 4);
    min = (scales[s + 4] >> 4) | ((scales[s] >> 6) << 4);
  }
}

// Bytes of one unit's storage for the 32-value formats; K-quants store 256
// values per super-block, so their units share a block (see decode_unit).
template <WeightFormat F>
constexpr int kBlockBytes = F == WeightFormat::q4_0   ? 18
                            : F == WeightFormat::q4_1 ? 20
                            : F == WeightFormat::q5_0 ? 22
                            : F == WeightFormat::q5_1 ? 24
                            : F == WeightFormat::q8_0 ? 34
                            : F == WeightFormat::q4_k ? 144
                            : F == WeightFormat::q5_k ? 176
                            : F == WeightFormat::q6_k ? 210
                            : F == WeightFormat::f16 || F == WeightFormat::bf16 ? 64
                                                                                 : 128;

template <WeightFormat F>
constexpr bool kIsKQuant = F == WeightFormat::q4_k || F == WeightFormat::q5_k || F == WeightFormat::q6_k;

// Values [32 u, 32 u + 32) of `row` into out[32].
template <WeightFormat F>
__device__ __forceinline__ void decode_unit(const uint8_t* row, int64_t u, float* out) {
  if constexpr (F == WeightFormat::f32) {
    const float* p = reinterpret_cast<const float*>(row) + 32 * u;
#pragma unroll
    for (int j = 0; j < 32; ++j) out[j] = p[j];
  } else if constexpr (F == WeightFormat::f16) {
    const uint8_t* p = row + 64 * u;
#pragma unroll
    for (int j = 0; j < 32; ++j) out[j] = load_f16(p + 2 * j);
  } else if constexpr (F == WeightFormat::bf16) {
    const uint8_t* p = row + 64 * u;
#pragma unroll
    for (int j = 0; j < 32; ++j) out[j] = __uint_as_float(uint32_t(p[2 * j] | (p[2 * j + 1] << 8)) << 16);
  } else if constexpr (F == WeightFormat::q4_0 || F == WeightFormat::q4_1) {
    const uint8_t* b = row + kBlockBytes<F> * u;
    const float d = load_f16(b);
    const uint8_t* qs = b + (F == WeightFormat::q4_1 ? 4 : 2);
    if constexpr (F == WeightFormat::q4_1) {
      const float m = load_f16(b + 2);
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        out[j] = float(qs[j] & 0xF) * d + m;
        out[j + 16] = float(qs[j] >> 4) * d + m;
      }
    } else {
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        out[j] = float((qs[j] & 0xF) - 8) * d;
        out[j + 16] = float((qs[j] >> 4) - 8) * d;
      }
    }
  } else if constexpr (F == WeightFormat::q5_0 || F == WeightFormat::q5_1) {
    const uint8_t* b = row + kBlockBytes<F> * u;
    const float d = load_f16(b);
    const uint8_t* hp = b + (F == WeightFormat::q5_1 ? 4 : 2);
    const uint32_t qh = load_u32(hp);
    const uint8_t* qs = hp + 4;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const int lo = (qs[j] & 0xF) | (((qh >> j) & 1) << 4);
      const int hi = (qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
      if constexpr (F == WeightFormat::q5_1) {
        const float m = load_f16(b + 2);
        out[j] = float(lo) * d + m;
        out[j + 16] = float(hi) * d + m;
      } else {
        out[j] = float(lo - 16) * d;
        out[j + 16] = float(hi - 16) * d;
      }
    }
  } else if constexpr (F == WeightFormat::q8_0) {
    const uint8_t* b = row + 34 * u;
    const float d = load_f16(b);
    const int8_t* qs = reinterpret_cast<const int8_t*>(b + 2);
#pragma unroll
    for (int j = 0; j < 32; ++j) out[j] = float(qs[j]) * d;
  } else if constexpr (F == WeightFormat::q4_k || F == WeightFormat::q5_k) {
    const uint8_t* b = row + kBlockBytes<F> * (u / 8);
    const int s = static_cast<int>(u % 8), chunk = s / 2, shift = 4 * (s % 2);
    int sc = 0, mn = 0;
    kquant_scale_min(b + 4, s, sc, mn);
    const float d = load_f16(b) * float(sc), m = load_f16(b + 2) * float(mn);
    const uint8_t* qh = b + 16;  // Q5_K only
    const uint8_t* qs = b + (F == WeightFormat::q5_k ? 48 : 16) + 32 * chunk;
#pragma unroll
    for (int l = 0; l < 32; ++l) {
      int q = (qs[l] >> shift) & 0xF;
      if constexpr (F == WeightFormat::q5_k) q |= ((qh[l] >> s) & 1) << 4;
      out[l] = d * float(q) - m;
    }
  } else if constexpr (F == WeightFormat::q6_k) {
    const uint8_t* b = row + 210 * (u / 8);
    const int s = static_cast<int>(u % 8), half = s / 4, quarter = s % 4;
    const uint8_t* ql = b + 64 * half + 32 * (quarter & 1);
    const uint8_t* qh = b + 128 + 32 * half;
    const int8_t* scales = reinterpret_cast<const int8_t*>(b + 192) + 8 * half + 2 * quarter;
    const float d = load_f16(b + 208);
    const int shift = quarter >= 2 ? 4 : 0;
#pragma unroll
    for (int l = 0; l < 32; ++l) {
      const int q = (((ql[l] >> shift) & 0xF) | (((qh[l] >> (2 * quarter)) & 3) << 4)) - 32;
      out[l] = d * float(scales[l / 16]) * float(q);
    }
  }
}

}  // namespace tessera::transformer::cuda
