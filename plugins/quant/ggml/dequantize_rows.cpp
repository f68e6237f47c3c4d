// dequantize_rows.cpp: the loops of dequantize_row_fast (dequantize_fast.hpp),
// compiled once per instruction-set level (tessera_isa_variants in
// CMakeLists.txt); dequantize_fast.cpp picks the level. The loops are plain
// C++ that the compiler vectorizes for each level's flags.
#include <cstdint>

#include "blocks.hpp"
#include "k_scales.hpp"
#include "low_bit_kquants.hpp"
#include "tessera/half.hpp"
#include "tessera/tensor.hpp"

namespace tessera::ggml::TESSERA_ISA_NAMESPACE {
namespace {

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

void q8_0_rows(const BlockQ8_0* __restrict x, float* __restrict y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, y += kBlock) {
    const float d = f16_to_f32(x[b].d);
    const int8_t* qs = x[b].qs;
#pragma omp simd
    for (int j = 0; j < kBlock; ++j) y[j] = d * static_cast<float>(qs[j]);
  }
}

// K-quants: super-blocks of 256 elements in sub-blocks of 32 (Q4_K, Q5_K) or
// 16 (Q6_K), each with its own integer scale (and minimum). Per super-block,
// the sub-block factors are first computed in f32 exactly as the reference
// does (d * sc and dmin * mn, one f32 product each) and the quants unpacked
// into a byte array with byte-wide masks and shifts; then one loop per
// sub-block, a broadcast factor times the widened quant minus a broadcast
// minimum, writes the floats. Sub-block i is elements [32i, 32i + 32) (Q6_K:
// [16i, 16i + 16)), so those loops are contiguous. Unpacking and converting in
// the same loop, as the reference is written, was slower: per row of 1536 on
// the AVX-512 level, Q5_K 232 -> 177 ns and Q6_K 318 -> 238 ns with the split
// (Q4_K 170 -> 166).
//
// Every product is exact in f32: an f16 scale has an 11-bit significand, sc
// and mn are 6-bit (Q6_K's int8 sc: 7 bits, or -128 = -2^7), q is at most
// 5-bit (Q6_K's q - 32: 5 bits, or -32), so d * sc * q needs at most 23 bits,
// and the magnitudes stay within f32's normal range. So (d * sc) * q -
// dmin * mn rounds once, in the subtraction, whether or not the compiler fuses
// it into a multiply-subtract (the avx2 level does), and every level gives
// the reference's bits.

// The factors of the 8 sub-blocks of a Q4_K/Q5_K super-block: d * sc and
// dmin * mn (k_scales.hpp unpacks sc and mn). Kept out of line: inlined into
// the row loops it ran slower.
[[gnu::noinline]] void k4_factors(const uint8_t* scales, float d, float dmin, float* dl, float* ml) {  // dl, ml: [8]
  uint8_t sc[8], mn[8];
  unpack_k4_scales(scales, sc, mn);
  for (int j = 0; j < 8; ++j) {
    dl[j] = d * static_cast<float>(sc[j]);
    ml[j] = dmin * static_cast<float>(mn[j]);
  }
}

// Chunk c (0..3) of 64 elements: sub-block 2c from the low nibbles of
// qs[32c .. 32c + 31], sub-block 2c + 1 from their high nibbles.
void q4_k_rows(const BlockQ4K* __restrict x, float* __restrict y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, y += kSuperBlock) {
    float dl[8], ml[8];  // [8] sub-block factors
    k4_factors(x[b].scales, f16_to_f32(x[b].d), f16_to_f32(x[b].dmin), dl, ml);
    uint8_t q[kSuperBlock];  // [256] quants 0..15
    for (int c = 0; c < 4; ++c) {
      const uint8_t* qs = x[b].qs + 32 * c;
      for (int l = 0; l < 32; ++l) {
        q[64 * c + l] = qs[l] & 0x0F;
        q[64 * c + 32 + l] = qs[l] >> 4;
      }
    }
    for (int j = 0; j < 8; ++j) {
      const float dj = dl[j], mj = ml[j];
#pragma omp simd
      for (int l = 0; l < 32; ++l) y[32 * j + l] = dj * static_cast<float>(q[32 * j + l]) - mj;
    }
  }
}

// As Q4_K; the fifth bit of element l of chunk c is bit 2c (first 32) or
// 2c + 1 (last 32) of qh[l]. OR-ing it in as 16 gives the reference's
// nibble + 16 (the nibble is below 16) without a branch per element.
void q5_k_rows(const BlockQ5K* __restrict x, float* __restrict y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, y += kSuperBlock) {
    float dl[8], ml[8];  // [8] sub-block factors
    k4_factors(x[b].scales, f16_to_f32(x[b].d), f16_to_f32(x[b].dmin), dl, ml);
    const uint8_t* qh = x[b].qh;
    uint8_t q[kSuperBlock];  // [256] quants 0..31
    for (int c = 0; c < 4; ++c) {
      const uint8_t* qs = x[b].qs + 32 * c;
      for (int l = 0; l < 32; ++l) {
        const int h = qh[l] >> (2 * c);  // bit 0: first 32, bit 1: last 32
        q[64 * c + l] = static_cast<uint8_t>((qs[l] & 0x0F) | ((h & 1) << 4));
        q[64 * c + 32 + l] = static_cast<uint8_t>((qs[l] >> 4) | ((h & 2) << 3));
      }
    }
    for (int j = 0; j < 8; ++j) {
      const float dj = dl[j], mj = ml[j];
#pragma omp simd
      for (int l = 0; l < 32; ++l) y[32 * j + l] = dj * static_cast<float>(q[32 * j + l]) - mj;
    }
  }
}

// Two halves of 128 elements, each from 64 bytes of ql, 32 of qh and 8
// scales: element l (0..31) of quarter k (0..3) takes its low 4 bits from the
// low (k = 0, 1) or high (k = 2, 3) nibble of ql[l + 32 * (k & 1)] and its
// high 2 bits from bits 2k, 2k + 1 of qh[l]. Its sub-block of 16 is
// 8 * half + 2k + l / 16, i.e. element e of the super-block is in sub-block
// e / 16, as the reference's sc[is + 2k] has it.
void q6_k_rows(const BlockQ6K* __restrict x, float* __restrict y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, y += kSuperBlock) {
    const float d = f16_to_f32(x[b].d);
    float ds[16];  // [16] sub-block factors d * sc
    for (int i = 0; i < 16; ++i) ds[i] = d * static_cast<float>(x[b].scales[i]);
    int8_t q[kSuperBlock];  // [256] quants - 32: -32..31
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = x[b].ql + 64 * half;
      const uint8_t* qh = x[b].qh + 32 * half;
      int8_t* qq = q + 128 * half;  // [128]
      for (int l = 0; l < 32; ++l) {
        qq[l] = static_cast<int8_t>(((ql[l] & 0x0F) | ((qh[l] & 3) << 4)) - 32);
        qq[l + 32] = static_cast<int8_t>(((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32);
        qq[l + 64] = static_cast<int8_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
        qq[l + 96] = static_cast<int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
      }
    }
    for (int i = 0; i < 16; ++i) {
      const float f = ds[i];
#pragma omp simd
      for (int l = 0; l < 16; ++l) y[16 * i + l] = f * static_cast<float>(q[16 * i + l]);
    }
  }
}

// f16 and bf16 rows, any n: both conversions are exact. F16C's vcvtph2ps
// where the level has it; bf16 is the top half of an f32, a shift the
// compiler vectorizes.
void f16_rows(const uint16_t* x, float* y, int64_t n) {
#if defined(__F16C__) && defined(__AVX__)
  f16c::f16_to_f32_n(x, y, n);
#else
  f16_to_f32_n(x, y, n);
#endif
}

void bf16_rows(const uint16_t* __restrict x, float* __restrict y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = bf16_to_f32(x[i]);
}

}  // namespace

bool dequantize_row_kernel(DType type, const void* x, float* y, int64_t n) {
  const int64_t n_blocks = n / kBlock;
  switch (type) {
    case DType::q4_0: q4_0_rows(static_cast<const BlockQ4_0*>(x), y, n_blocks); return true;
    case DType::q4_1: q4_1_rows(static_cast<const BlockQ4_1*>(x), y, n_blocks); return true;
    case DType::q8_0: q8_0_rows(static_cast<const BlockQ8_0*>(x), y, n_blocks); return true;
    case DType::q4_k: q4_k_rows(static_cast<const BlockQ4K*>(x), y, n / kSuperBlock); return true;
    case DType::q5_k: q5_k_rows(static_cast<const BlockQ5K*>(x), y, n / kSuperBlock); return true;
    case DType::q6_k: q6_k_rows(static_cast<const BlockQ6K*>(x), y, n / kSuperBlock); return true;
    case DType::q2_k: q2_k_rows(static_cast<const BlockQ2K*>(x), y, n / kSuperBlock); return true;  // low_bit_kquants.hpp
    case DType::q3_k: q3_k_rows(static_cast<const BlockQ3K*>(x), y, n / kSuperBlock); return true;
    case DType::f16: f16_rows(static_cast<const uint16_t*>(x), y, n); return true;
    case DType::bf16: bf16_rows(static_cast<const uint16_t*>(x), y, n); return true;
    default: return false;
  }
}

}  // namespace tessera::ggml::TESSERA_ISA_NAMESPACE
