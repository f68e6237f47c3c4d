// kernels_avx512_impl.hpp: the AVX-512 kernels, included by exactly two
// translation units: kernels_avx512.cpp (TESSERA_GGML_VNNI 0, F/BW/VL) and
// kernels_avx512_vnni.cpp (TESSERA_GGML_VNNI 1, adds vpdpbusd). Everything is
// in an anonymous namespace, so each includer gets its own copy compiled with
// its own flags and nothing leaks to the linker.
//
// Two consecutive blocks share one zmm register: bytes 0..31 are block b, bytes
// 32..63 block b + 1, so i32 lanes 0..7 hold block b's partial sums and lanes
// 8..15 block b + 1's. Per-block scales are spread the same way.
#pragma once

#include <immintrin.h>

#include "kernels.hpp"
#include "kquant_groups.hpp"

#ifndef TESSERA_GGML_VNNI
#error "define TESSERA_GGML_VNNI to 0 or 1 before including kernels_avx512_impl.hpp"
#endif

namespace tessera::ggml {
namespace {


inline uint32_t load_u32(const void* p) {
  uint32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}

// Two f16 values, one per block, spread as (a x 8, b x 8).
inline __m512 spread2(uint16_t a, uint16_t b) {
  const __m128 ab = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(a | (static_cast<uint32_t>(b) << 16))));
  return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
                               _mm512_castps128_ps512(ab));
}

// sum over groups of 4 of u[i] * s[i], into 16 lanes of i32, added to acc.
inline __m512i dot_u8_i8_acc(__m512i acc, __m512i u, __m512i s) {
#if TESSERA_GGML_VNNI
  return _mm512_dpbusd_epi32(acc, u, s);
#else
  // vpmaddubsw pairs cannot saturate here: |u| <= 255 only in the sum-of-x
  // correction (u = 8 or 128 with |s| <= 127: 2 * 128 * 127 < 32767).
  const __m512i pairs = _mm512_maddubs_epi16(u, s);
  return _mm512_add_epi32(acc, _mm512_madd_epi16(pairs, _mm512_set1_epi16(1)));
#endif
}

inline float hsum(__m512 v) { return _mm512_reduce_add_ps(v); }

// Two activation blocks, prepared once and reused for every weight row of a tile.
// When only one block is left (odd block count), the second half is all zero,
// which makes every product with it zero whatever the weight half holds.
struct XPair {
  __m512i q;        // 64 x int8
  __m512 d;         // (d0 x 8, d1 x 8)
  __m512 s_odd;     // (0, s0, 0, s1, 0, ...): with a weight vector (d0, m0, d1, m1, 0...) one fma adds m*s
  __m512i neg_sum8;    // -8 * (sum of each group of 4 x values): Q4_0's "q - 8"
  __m512i neg_sum128;  // -128 * (same): Q8_0 stored as q + 128 for vpdpbusd
};

inline XPair load_x(const BlockQ8_1* b0, const BlockQ8_1* b1) {
  XPair x;
  const __m256i q0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0->qs));
  const __m256i q1 = b1 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b1->qs)) : _mm256_setzero_si256();
  x.q = _mm512_inserti64x4(_mm512_castsi256_si512(q0), q1, 1);
  const uint32_t ds0 = load_u32(&b0->d);
  const uint32_t ds1 = b1 ? load_u32(&b1->d) : 0u;
  // (d0, s0, d1, s1) as f32
  const __m128 ds = _mm_cvtph_ps(_mm_insert_epi32(_mm_cvtsi32_si128(static_cast<int>(ds0)), static_cast<int>(ds1), 1));
  x.d = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2),
                              _mm512_castps128_ps512(ds));
  x.s_odd = _mm512_zextps128_ps512(_mm_blend_ps(ds, _mm_setzero_ps(), 0b0101));
  const __m512i zero = _mm512_setzero_si512();
  x.neg_sum8 = _mm512_sub_epi32(zero, dot_u8_i8_acc(zero, _mm512_set1_epi8(8), x.q));
  x.neg_sum128 = _mm512_sub_epi32(zero, dot_u8_i8_acc(zero, _mm512_set1_epi8(static_cast<char>(0x80)), x.q));
  return x;
}

// Two 16-byte nibble arrays -> 64 values 0..15 in ggml order for both blocks.
inline __m512i load_nibbles2(const uint8_t* qs0, const uint8_t* qs1) {
  const __m256i q = _mm256_inserti128_si256(
      _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs0))),
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs1)), 1);          // (q0 | q1)
  const __m512i dup = _mm512_shuffle_i64x2(_mm512_castsi256_si512(q), _mm512_castsi256_si512(q),
                                           _MM_SHUFFLE(1, 1, 0, 0));        // (q0, q0, q1, q1)
  const __m512i shifts = _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4);         // low nibbles, then high
  return _mm512_and_si512(_mm512_srlv_epi64(dup, shifts), _mm512_set1_epi8(0x0F));
}

// The high bits of two Q5_0/Q5_1 blocks -> 0x10 in byte j (block b) and
// byte 32 + j (block b + 1) where that element's bit 4 is set: bit j of qh is
// element j's (blocks.hpp), so the two 32-bit words are the byte mask itself.
inline __m512i high_bits2(const uint8_t* qh0, const uint8_t* qh1) {
  const uint64_t bits = load_u32(qh0) | (static_cast<uint64_t>(load_u32(qh1)) << 32);
  return _mm512_maskz_mov_epi8(bits, _mm512_set1_epi8(0x10));
}

// (d0 x 8, d1 x 8) and (d0, m0, d1, m1, 0, ...) of two blocks that start with
// an f16 d followed by an f16 m (Q4_1, Q5_1).
template <typename Block>
void load_dm2(const Block& b0, const Block& b1, __m512& d, __m512& dm) {
  const __m128i h = _mm_insert_epi32(_mm_cvtsi32_si128(static_cast<int>(load_u32(&b0.d))),
                                     static_cast<int>(load_u32(&b1.d)), 1);
  const __m128 dmf = _mm_cvtph_ps(h);
  d = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2),
                            _mm512_castps128_ps512(dmf));
  dm = _mm512_zextps128_ps512(dmf);
}

struct Q4_0 {
  using Block = BlockQ4_0;
  struct W {
    __m512i q;  // 0..15
    __m512 d;
  };
  static W load(const Block& b0, const Block& b1) {
    return {load_nibbles2(b0.qs, b1.qs), spread2(b0.d, b1.d)};
  }
  static __m512 pair(const W& w, const XPair& x, __m512 acc) {
    const __m512i dot = dot_u8_i8_acc(x.neg_sum8, w.q, x.q);  // sum (q - 8) * x
    return _mm512_fmadd_ps(_mm512_mul_ps(w.d, x.d), _mm512_cvtepi32_ps(dot), acc);
  }
};

struct Q4_1 {
  using Block = BlockQ4_1;
  struct W {
    __m512i q;
    __m512 d;   // (d0 x 8, d1 x 8)
    __m512 dm;  // (d0, m0, d1, m1, 0, ...)
  };
  static W load(const Block& b0, const Block& b1) {
    W w;
    w.q = load_nibbles2(b0.qs, b1.qs);
    load_dm2(b0, b1, w.d, w.dm);
    return w;
  }
  static __m512 pair(const W& w, const XPair& x, __m512 acc) {
    acc = _mm512_fmadd_ps(w.dm, x.s_odd, acc);
    const __m512i dot = dot_u8_i8_acc(_mm512_setzero_si512(), w.q, x.q);
    return _mm512_fmadd_ps(_mm512_mul_ps(w.d, x.d), _mm512_cvtepi32_ps(dot), acc);
  }
};

struct Q5_0 {
  using Block = BlockQ5_0;
  struct W {
    __m512i q;  // 0..31
    __m512 d;
  };
  static W load(const Block& b0, const Block& b1) {
    return {_mm512_or_si512(load_nibbles2(b0.qs, b1.qs), high_bits2(b0.qh, b1.qh)), spread2(b0.d, b1.d)};
  }
  static __m512 pair(const W& w, const XPair& x, __m512 acc) {
    // sum (q - 16) * x: the -16 is twice Q4_0's -8 correction.
    const __m512i dot = dot_u8_i8_acc(_mm512_slli_epi32(x.neg_sum8, 1), w.q, x.q);
    return _mm512_fmadd_ps(_mm512_mul_ps(w.d, x.d), _mm512_cvtepi32_ps(dot), acc);
  }
};

// Q4_1's arithmetic on 5-bit values.
struct Q5_1 {
  using Block = BlockQ5_1;
  using W = Q4_1::W;
  static W load(const Block& b0, const Block& b1) {
    W w;
    w.q = _mm512_or_si512(load_nibbles2(b0.qs, b1.qs), high_bits2(b0.qh, b1.qh));
    load_dm2(b0, b1, w.d, w.dm);
    return w;
  }
  static __m512 pair(const W& w, const XPair& x, __m512 acc) { return Q4_1::pair(w, x, acc); }
};

struct Q8_0 {
  using Block = BlockQ8_0;
#if TESSERA_GGML_VNNI
  struct W {
    __m512i u;  // q + 128 as u8; the 128 * sum(x) excess is removed through XPair::neg_sum128
    __m512 d;
  };
#else
  struct W {
    __m512i abs;    // |q|: vpmaddubsw needs an unsigned operand, so the sign moves to x
    __mmask64 neg;  // q < 0
    __m512 d;
  };
#endif
  static W load(const Block& b0, const Block& b1) {
    const __m512i q = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0.qs))),
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b1.qs)), 1);
#if TESSERA_GGML_VNNI
    return {_mm512_xor_si512(q, _mm512_set1_epi8(static_cast<char>(0x80))), spread2(b0.d, b1.d)};
#else
    return {_mm512_abs_epi8(q), _mm512_movepi8_mask(q), spread2(b0.d, b1.d)};
#endif
  }
  static __m512 pair(const W& w, const XPair& x, __m512 acc) {
#if TESSERA_GGML_VNNI
    const __m512i dot = _mm512_dpbusd_epi32(x.neg_sum128, w.u, x.q);
#else
    const __m512i signed_x = _mm512_mask_sub_epi8(x.q, w.neg, _mm512_setzero_si512(), x.q);
    const __m512i dot = dot_u8_i8_acc(_mm512_setzero_si512(), w.abs, signed_x);
#endif
    return _mm512_fmadd_ps(_mm512_mul_ps(w.d, x.d), _mm512_cvtepi32_ps(dot), acc);
  }
};

template <typename F, int NW, int NX>
void tile_fixed(const uint8_t* w, size_t w_row_bytes, const BlockQ8_1* x, size_t x_row_blocks,
                int64_t nb, float* y, size_t y_stride) {
  using Block = typename F::Block;
  __m512 acc[NX][NW];
  for (int xi = 0; xi < NX; ++xi)
    for (int wi = 0; wi < NW; ++wi) acc[xi][wi] = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    XPair xp[NX];
    for (int xi = 0; xi < NX; ++xi) {
      const BlockQ8_1* xr = x + xi * x_row_blocks + b;
      xp[xi] = load_x(xr, xr + 1);
    }
    for (int wi = 0; wi < NW; ++wi) {
      const auto* row = reinterpret_cast<const Block*>(w + wi * w_row_bytes);
      const typename F::W wp = F::load(row[b], row[b + 1]);
      for (int xi = 0; xi < NX; ++xi) acc[xi][wi] = F::pair(wp, xp[xi], acc[xi][wi]);
    }
  }
  if (b < nb) {  // odd tail: the zero second x half cancels the repeated weight block
    XPair xp[NX];
    for (int xi = 0; xi < NX; ++xi) xp[xi] = load_x(x + xi * x_row_blocks + b, nullptr);
    for (int wi = 0; wi < NW; ++wi) {
      const auto* row = reinterpret_cast<const Block*>(w + wi * w_row_bytes);
      const typename F::W wp = F::load(row[b], row[b]);
      for (int xi = 0; xi < NX; ++xi) acc[xi][wi] = F::pair(wp, xp[xi], acc[xi][wi]);
    }
  }
  for (int xi = 0; xi < NX; ++xi)
    for (int wi = 0; wi < NW; ++wi) y[xi * y_stride + wi] = hsum(acc[xi][wi]);
}

template <typename F>
void tile(const void* w, size_t w_row_bytes, int nw, const BlockQ8_1* x, size_t x_row_blocks,
          int nx, int64_t nb, float* y, size_t y_stride) {
  using Fn = void (*)(const uint8_t*, size_t, const BlockQ8_1*, size_t, int64_t, float*, size_t);
  static constexpr Fn table[kMaxTileW][kMaxTileX] = {
      {tile_fixed<F, 1, 1>, tile_fixed<F, 1, 2>, tile_fixed<F, 1, 3>, tile_fixed<F, 1, 4>},
      {tile_fixed<F, 2, 1>, tile_fixed<F, 2, 2>, tile_fixed<F, 2, 3>, tile_fixed<F, 2, 4>},
      {tile_fixed<F, 3, 1>, tile_fixed<F, 3, 2>, tile_fixed<F, 3, 3>, tile_fixed<F, 3, 4>},
      {tile_fixed<F, 4, 1>, tile_fixed<F, 4, 2>, tile_fixed<F, 4, 3>, tile_fixed<F, 4, 4>},
  };
  table[nw - 1][nx - 1](static_cast<const uint8_t*>(w), w_row_bytes, x, x_row_blocks, nb, y, y_stride);
}

void quantize_q8_1(const float* x, BlockQ8_1* y, int64_t n) {
  for (int64_t b = 0; b < n / kBlock; ++b, x += kBlock) {
    const __m512 v0 = _mm512_loadu_ps(x);
    const __m512 v1 = _mm512_loadu_ps(x + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const __m512 idv = _mm512_set1_ps(id);
    const __m512i q0 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(v0, idv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512i q1 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(v1, idv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const int sum = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].qs), _mm512_cvtsepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].qs + 16), _mm512_cvtsepi32_epi8(q1));
    const uint16_t d16 = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);
    y[b].d = d16;
    y[b].s = _cvtss_sh(_cvtsh_ss(d16) * static_cast<float>(sum), _MM_FROUND_TO_NEAREST_INT);
  }
}

float dot_f32(const void* w, const float* x, int64_t n) {
  const auto* wf = static_cast<const float*>(w);
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(wf + i), _mm512_loadu_ps(x + i), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(wf + i + 16), _mm512_loadu_ps(x + i + 16), acc1);
  }
  if (i < n) {  // masked tail: up to 31 elements
    const int64_t left = n - i;
    const __mmask16 m0 = left >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << left) - 1);
    const __mmask16 m1 = left > 16 ? static_cast<__mmask16>((1u << (left - 16)) - 1) : 0;
    acc0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m0, wf + i), _mm512_maskz_loadu_ps(m0, x + i), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m1, wf + i + 16), _mm512_maskz_loadu_ps(m1, x + i + 16), acc1);
  }
  return hsum(_mm512_add_ps(acc0, acc1));
}

// Block-format rows with f32 activations (KernelTable::q4_0_f32, ...). A
// block's 32 weights are two 16-lane halves, elements 0..15 and 16..31: the
// halves dot_f32 puts in acc0 and acc1. The result is dequantize + dot_f32 to
// the bit: d * q is exact in f32 (an f16 scale has an 11-bit significand, q at
// most 8 bits), so d * q + m rounds once whether or not it is fused.
inline __m512 widen(__m512i q) { return _mm512_cvtepi32_ps(q); }

struct Q4_0Weights {
  using Block = BlockQ4_0;
  static void load(const Block& b, __m512* lo, __m512* hi) {
    const __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs)));
    const __m512i eight = _mm512_set1_epi32(8);
    const __m512 d = _mm512_set1_ps(_cvtsh_ss(b.d));
    *lo = _mm512_mul_ps(widen(_mm512_sub_epi32(_mm512_and_si512(q, _mm512_set1_epi32(0x0F)), eight)), d);
    *hi = _mm512_mul_ps(widen(_mm512_sub_epi32(_mm512_srli_epi32(q, 4), eight)), d);
  }
};

struct Q4_1Weights {
  using Block = BlockQ4_1;
  static void load(const Block& b, __m512* lo, __m512* hi) {
    const __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs)));
    const __m512 d = _mm512_set1_ps(_cvtsh_ss(b.d)), m = _mm512_set1_ps(_cvtsh_ss(b.m));
    *lo = _mm512_fmadd_ps(widen(_mm512_and_si512(q, _mm512_set1_epi32(0x0F))), d, m);
    *hi = _mm512_fmadd_ps(widen(_mm512_srli_epi32(q, 4)), d, m);
  }
};

struct Q8_0Weights {
  using Block = BlockQ8_0;
  static void load(const Block& b, __m512* lo, __m512* hi) {
    const __m512 d = _mm512_set1_ps(_cvtsh_ss(b.d));
    *lo = _mm512_mul_ps(widen(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs)))), d);
    *hi = _mm512_mul_ps(widen(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 16)))), d);
  }
};

// One row at a time: tried four rows sharing each activation load, decode in
// the f32 mode was 30-45% slower.
template <typename Weights>
float dot_blocks_f32(const void* w, const float* x, int64_t n) {
  const auto* blocks = static_cast<const typename Weights::Block*>(w);
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  for (int64_t b = 0; b < n / kBlock; ++b) {
    __m512 lo, hi;
    Weights::load(blocks[b], &lo, &hi);
    acc0 = _mm512_fmadd_ps(lo, _mm512_loadu_ps(x + kBlock * b), acc0);
    acc1 = _mm512_fmadd_ps(hi, _mm512_loadu_ps(x + kBlock * b + 16), acc1);
  }
  return hsum(_mm512_add_ps(acc0, acc1));
}

inline __m512 f16x16(const uint16_t* p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}
inline __m512 bf16x16(const uint16_t* p, __mmask16 m) {  // bf16 is the top half of an f32
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
}

inline __m512 f32x16(const float* p) { return _mm512_loadu_ps(p); }
template <__m512 (*Load)(const uint16_t*, __mmask16)>
__m512 whole16(const uint16_t* p) {
  return Load(p, 0xFFFF);
}

// NW weight rows (f32, or f16/bf16 widened in registers as they load) x NX
// activation rows, each pair summed as the level's dot sums it (elements
// 0..15 and 16..31 of every 32 in two accumulators): 2 NW NX accumulators,
// the NW rows' two vectors loaded once per 32-element step for all NX
// activation rows. f16/bf16 tiles prefetch the next NW rows as they go (a
// prefetch never faults, past the weights' end included): without it they
// ran behind two plain dots over rows streamed from memory. f32 tiles do
// not: the same prefetch made them 15% slower (BM_FloatRows, 2-8 rows).
template <typename Element, __m512 (*Load)(const Element*), int NW, int NX>
void float_tile_fixed(const Element* w, size_t w_stride, const float* x, size_t x_stride, int64_t n, float* y,
                      size_t y_stride) {
  __m512 acc0[NX][NW], acc1[NX][NW];
#pragma GCC unroll 8
  for (int xi = 0; xi < NX; ++xi)
#pragma GCC unroll 8
    for (int wi = 0; wi < NW; ++wi) acc0[xi][wi] = acc1[xi][wi] = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 32) {
    __m512 w0[NW], w1[NW];
#pragma GCC unroll 8
    for (int wi = 0; wi < NW; ++wi) {
      if constexpr (sizeof(Element) == 2)
        _mm_prefetch(reinterpret_cast<const char*>(w + (NW + wi) * w_stride + i), _MM_HINT_T0);
      w0[wi] = Load(w + wi * w_stride + i);
      w1[wi] = Load(w + wi * w_stride + i + 16);
    }
#pragma GCC unroll 8
    for (int xi = 0; xi < NX; ++xi) {
      const __m512 x0 = _mm512_loadu_ps(x + xi * x_stride + i), x1 = _mm512_loadu_ps(x + xi * x_stride + i + 16);
#pragma GCC unroll 8
      for (int wi = 0; wi < NW; ++wi) {
        acc0[xi][wi] = _mm512_fmadd_ps(w0[wi], x0, acc0[xi][wi]);
        acc1[xi][wi] = _mm512_fmadd_ps(w1[wi], x1, acc1[xi][wi]);
      }
    }
  }
  // Unrolled like the loops above, so the accumulators stay in registers (a
  // loop over them here kept the arrays in memory: every step stored them).
#pragma GCC unroll 8
  for (int xi = 0; xi < NX; ++xi)
#pragma GCC unroll 8
    for (int wi = 0; wi < NW; ++wi) y[xi * y_stride + wi] = hsum(_mm512_add_ps(acc0[xi][wi], acc1[xi][wi]));
}

void f32_tile(const float* w, size_t w_stride, int nw, const float* x, size_t x_stride, int nx, int64_t n, float* y,
              size_t y_stride) {
  using Fn = void (*)(const float*, size_t, const float*, size_t, int64_t, float*, size_t);
  static constexpr Fn kTable[kMaxFloatTileW][kMaxFloatTileX] = {
      {&float_tile_fixed<float, f32x16, 1, 1>, &float_tile_fixed<float, f32x16, 1, 2>},
      {&float_tile_fixed<float, f32x16, 2, 1>, &float_tile_fixed<float, f32x16, 2, 2>},
      {&float_tile_fixed<float, f32x16, 3, 1>, &float_tile_fixed<float, f32x16, 3, 2>},
      {&float_tile_fixed<float, f32x16, 4, 1>, &float_tile_fixed<float, f32x16, 4, 2>},
  };
  kTable[nw - 1][nx - 1](w, w_stride, x, x_stride, n, y, y_stride);
}

template <__m512 (*Load)(const uint16_t*, __mmask16)>
float dot_half(const void* w, const float* x, int64_t n) {
  const auto* wh = static_cast<const uint16_t*>(w);
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm512_fmadd_ps(Load(wh + i, 0xFFFF), _mm512_loadu_ps(x + i), acc0);
    acc1 = _mm512_fmadd_ps(Load(wh + i + 16, 0xFFFF), _mm512_loadu_ps(x + i + 16), acc1);
  }
  for (; i < n; i += 16) {
    const int64_t left = n - i;
    const __mmask16 m = left >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << left) - 1);
    acc0 = _mm512_fmadd_ps(Load(wh + i, m), _mm512_maskz_loadu_ps(m, x + i), acc0);
  }
  return hsum(_mm512_add_ps(acc0, acc1));
}

template <__m512 (*Load)(const uint16_t*, __mmask16)>
void half_tile(const uint16_t* w, size_t w_stride, int nw, const float* x, size_t x_stride, int nx, int64_t n,
               float* y, size_t y_stride) {
  using Fn = void (*)(const uint16_t*, size_t, const float*, size_t, int64_t, float*, size_t);
  static_assert(kMaxHalfTileW == 2 && kMaxHalfTileX == 4, "the table below lists every shape");
  static constexpr Fn kTable[kMaxHalfTileW][kMaxHalfTileX] = {
      {&float_tile_fixed<uint16_t, whole16<Load>, 1, 1>, &float_tile_fixed<uint16_t, whole16<Load>, 1, 2>,
       &float_tile_fixed<uint16_t, whole16<Load>, 1, 3>, &float_tile_fixed<uint16_t, whole16<Load>, 1, 4>},
      {&float_tile_fixed<uint16_t, whole16<Load>, 2, 1>, &float_tile_fixed<uint16_t, whole16<Load>, 2, 2>,
       &float_tile_fixed<uint16_t, whole16<Load>, 2, 3>, &float_tile_fixed<uint16_t, whole16<Load>, 2, 4>},
  };
  kTable[nw - 1][nx - 1](w, w_stride, x, x_stride, n, y, y_stride);
}

#include "fifth_bits_impl.hpp"
#define TESSERA_GGML_REPACK_TILE_X 8
#include "kernels_repack_impl.hpp"
#if TESSERA_GGML_VNNI
#include "kernels_repack16_impl.hpp"
#endif
#include "activation_row_impl.hpp"

const KernelTable& make_table(IsaLevel level, const char* name) {
  static const KernelTable table{
      level, name, kMaxTileX, &quantize_q8_1, &tile<Q4_0>, &tile<Q4_1>, &tile<Q8_0>,
      &dot_f32, &dot_half<f16x16>, &dot_half<bf16x16>, repack::q4_1x8, repack::q8_0x8,
#if TESSERA_GGML_VNNI
      repack16::q4_1x16, repack16::q8_0x16,
#else
      nullptr, nullptr,  // the 16-row Q8_0 layout needs vpdpbusd (vpmaddubsw would saturate on q + 128)
#endif
      &dot_blocks_f32<Q4_0Weights>, &dot_blocks_f32<Q4_1Weights>, &dot_blocks_f32<Q8_0Weights>, &f32_tile,
      &tile<Q5_0>, &tile<Q5_1>,
      // The K-quants run the AVX2 kernels: a 512-bit version (64 weights per
      // step, vpermw for Q6_K's scales) was slower on Zen 4, which splits zmm
      // integer work into two 256-bit halves: 4096 x 4096 streamed, one core,
      // Q4_K 13.1-13.3 against 15.1-15.3 GB/s, Q6_K 16.2 against 16.9-17.0.
      avx2_kernel_table().q4_k, avx2_kernel_table().q5_k, avx2_kernel_table().q6_k,
#if TESSERA_GGML_VNNI
      repack16::q5_0x16, repack16::q5_1x16,
#else
      nullptr, nullptr,
#endif
      repack::q5_0x8, repack::q5_1x8,
      avx2_kernel_table().quantize_q8_k,  // with the AVX2 K-quant kernels it feeds
#if TESSERA_GGML_VNNI
      &q4_kx8_avx512_vnni, &q6_kx8_avx512_vnni, &q5_kx8_avx512_vnni,
#else
      avx2_kernel_table().q4_kx8, avx2_kernel_table().q6_kx8, avx2_kernel_table().q5_kx8,
#endif
      nullptr, nullptr, nullptr,  // K-quant panels: the amx level's (kquant_panels_amx.cpp)
      avx2_kernel_table().q2_k, avx2_kernel_table().q3_k,
#if TESSERA_GGML_VNNI
      &q2_kx8_avx512_vnni, &q3_kx8_avx512_vnni,
#else
      avx2_kernel_table().q2_kx8, avx2_kernel_table().q3_kx8,
#endif
#if TESSERA_GGML_VNNI
      &q4_k_pair_avx512_vnni, &q5_k_pair_avx512_vnni, &q6_k_pair_avx512_vnni, &q2_k_pair_avx512_vnni,
      &q3_k_pair_avx512_vnni,
#else
      nullptr, nullptr, nullptr, nullptr, nullptr,  // the K-quant pairs need vpdpbusd's broadcast operand to pay
#endif
      &half_tile<f16x16>, &half_tile<bf16x16>,
      repack::q4_0x8,
#if TESSERA_GGML_VNNI
      repack16::q4_0x16,
#else
      nullptr,
#endif
      &activation_row::quantize_row<&quantize_q8_1>,

      nullptr, nullptr, nullptr, nullptr, nullptr,  // block panels: the amx level's
  };
  return table;
}

}  // namespace
}  // namespace tessera::ggml
