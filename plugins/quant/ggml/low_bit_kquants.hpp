// low_bit_kquants.hpp: one Q2_K or Q3_K super-block (blocks.hpp) to its 256
// floats, one sub-block of 16 at a time. Sub-block s is elements 16s..16s + 15,
// which read qs[32 h + 16 (s % 2) + l] at shift 2j with h = s / 8 and
// j = (s % 8) / 2. Every product is exact in f32 (an f16 scale's 11 bits
// times a 6-bit scale times a 3-bit value), so Q2_K's dl * q - ml rounds once,
// fused or not, and every compilation gives the same bits.
//
// The one definition of these formats' values: reference.cpp calls it as the
// scalar reference, dequantize_rows.cpp once per instruction-set level (its
// inner loops vectorize). Internal linkage on purpose, as k_scales.hpp: each
// translation unit compiled with its own -m flags keeps its own copy. The
// layouts are checked against gguf-py's values (tests/data/kquant-vectors).
#pragma once

#include <cstdint>

#include "blocks.hpp"
#include "tessera/half.hpp"

namespace tessera::ggml {
namespace {

inline void q2_k_super_block(const BlockQ2K& x, float* __restrict y) {  // y: [256]
  const float d = f16_to_f32(x.d), dmin = f16_to_f32(x.dmin);
  for (int s = 0; s < 16; ++s, y += 16) {
    const float dl = d * static_cast<float>(x.scales[s] & 0x0F);
    const float ml = dmin * static_cast<float>(x.scales[s] >> 4);
    const uint8_t* qs = x.qs + 32 * (s / 8) + 16 * (s % 2);
    const int shift = 2 * ((s % 8) / 2);
#pragma omp simd
    for (int l = 0; l < 16; ++l) y[l] = dl * static_cast<float>((qs[l] >> shift) & 3) - ml;
  }
}

// Sub-block s's 6-bit scale, -32..31: the low four bits in the low (s < 8) or
// high nibble of scales[s % 8], the high two at bits 2 (s / 4) of scales[8 + s % 4].
inline int q3_k_scale(const uint8_t* scales, int s) {
  const int low = s < 8 ? scales[s] & 0x0F : scales[s - 8] >> 4;
  const int high = (scales[8 + s % 4] >> (2 * (s / 4))) & 3;
  return (low | (high << 4)) - 32;
}

// q = the two low bits, minus 4 where the element's hmask bit 4h + j is clear.
inline void q3_k_super_block(const BlockQ3K& x, float* __restrict y) {  // y: [256]
  const float d = f16_to_f32(x.d);
  for (int s = 0; s < 16; ++s, y += 16) {
    const float dl = d * static_cast<float>(q3_k_scale(x.scales, s));
    const uint8_t* qs = x.qs + 32 * (s / 8) + 16 * (s % 2);
    const uint8_t* hmask = x.hmask + 16 * (s % 2);
    const int j = (s % 8) / 2, hbit = 4 * (s / 8) + j;
#pragma omp simd
    for (int l = 0; l < 16; ++l)
      y[l] = dl * static_cast<float>(((qs[l] >> (2 * j)) & 3) - 4 + 4 * ((hmask[l] >> hbit) & 1));
  }
}

// Rows of n_blocks super-blocks.
inline void q2_k_rows(const BlockQ2K* x, float* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) q2_k_super_block(x[b], y + b * kSuperBlock);
}
inline void q3_k_rows(const BlockQ3K* x, float* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) q3_k_super_block(x[b], y + b * kSuperBlock);
}

}  // namespace
}  // namespace tessera::ggml
