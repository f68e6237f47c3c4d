// low_bit_kquants.hpp: one Q2_K or Q3_K super-block (blocks.hpp) to its 256
// floats, one sub-block of 16 at a time, and Q3_K's scales as the SIMD
// kernels read them (q3_k_biased_scale_words). Sub-block s is elements 16s..16s + 15,
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
#include <cstring>

#include "blocks.hpp"
#include "tessera/half.hpp"

namespace tessera::ggml {
namespace {

// Element e's two low bits (Q2_K's quant, Q3_K's low part) and Q3_K's third
// bit, one at a time: for the repacking and the scalar kernels, which read
// elements in other orders than the sub-block loops below.
inline int low_two_bits(const uint8_t* qs, int e) { return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3; }
inline int q3_k_third_bit(const uint8_t* hmask, int e) { return (hmask[e % 32] >> (e / 32)) & 1; }

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

// All 16 at once, as q3_k_scale gives them but plus 32 (0..63), four to a
// little-endian word (the SIMD kernels' form: one vector insert, no stores):
// with the 12 bytes read as three words a0, a1, a2, the low four bits of
// scales 0..3 are a0's low nibbles, of 4..7 a1's, of 8..11 a0's high nibbles
// and of 12..15 a1's; the high two bits of scales 4k..4k + 3 are bits 2k,
// 2k + 1 of a2's four bytes.
inline void q3_k_biased_scale_words(const uint8_t* scales, uint32_t* words) {  // words: [4]
  uint32_t a[3];
  std::memcpy(a, scales, sizeof a);
  constexpr uint32_t kNibbles = 0x0F0F0F0F, kTwoBits = 0x03030303;
  words[0] = (a[0] & kNibbles) | ((a[2] & kTwoBits) << 4);
  words[1] = (a[1] & kNibbles) | (((a[2] >> 2) & kTwoBits) << 4);
  words[2] = ((a[0] >> 4) & kNibbles) | (((a[2] >> 4) & kTwoBits) << 4);
  words[3] = ((a[1] >> 4) & kNibbles) | (((a[2] >> 6) & kTwoBits) << 4);
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
