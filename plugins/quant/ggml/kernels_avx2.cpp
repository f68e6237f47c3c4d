// kernels_avx2.cpp: AVX2 + FMA + F16C kernels. Compiled with -mavx2 -mfma -mf16c;
// only reached when the CPU reports all three (see dispatch.cpp).
//
// Everything here has internal linkage (anonymous namespace) and uses no
// standard-library templates, so no function compiled with these flags can be
// picked by the linker for generic code.
//
// One Q8_1 activation block sits in one ymm register; a weight block is
// unpacked to 32 bytes beside it. u8 x i8 products are summed by vpmaddubsw
// (pairs, to i16: 2 * 15 * 127 and 2 * 127 * 127 cannot saturate) and vpmaddwd
// (to 8 lanes of i32); each block's lanes are then scaled in f32 and added to a
// per-(weight row, activation row) accumulator, reduced once at the end.
#include <immintrin.h>

#include <type_traits>

#include "k_scales.hpp"
#include "kernels.hpp"
#include "kquant_groups.hpp"
#include "low_bit_kquants.hpp"

namespace tessera::ggml {
namespace {

inline float f16(uint16_t h) { return _cvtsh_ss(h); }

inline __m256i load_nibbles(const uint8_t* qs) {  // 16 bytes -> 32 values 0..15, ggml order
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(q, 4), q);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

#include "fifth_bits_impl.hpp"

// The 32 high bits of a Q5_0/Q5_1 block (bit j: element j) -> 0x10 in byte j.
inline __m256i load_high_bits(const uint8_t* qh) {
  uint32_t bits;
  __builtin_memcpy(&bits, qh, 4);
  return fifth_bits(bits);
}

inline __m256i dot_u8_i8(__m256i u, __m256i s) {  // 8 lanes of i32 partial sums
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// One activation block, prepared once and reused for every weight row of a tile.
struct XBlock {
  __m256i q;       // 32 x int8
  __m256 d;        // d broadcast
  __m256 s_lane1;  // (0, s, 0, ..., 0): adds m * s through one fma with (d, m, 0...)
  __m256i sum8;    // 8 * sum(q) per i32 lane, the Q4_0 offset correction
};

inline XBlock load_x(const BlockQ8_1& b) {
  XBlock x;
  x.q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
  uint32_t ds;
  __builtin_memcpy(&ds, &b.d, 4);
  const __m128 dsf = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(ds)));  // (d, s, 0, 0)
  x.d = _mm256_broadcastss_ps(dsf);
  x.s_lane1 = _mm256_zextps128_ps256(_mm_blend_ps(dsf, _mm_setzero_ps(), 1));
  x.sum8 = dot_u8_i8(_mm256_set1_epi8(8), x.q);
  return x;
}

struct Q4_0 {
  using Block = BlockQ4_0;
  struct W {
    __m256i q;  // 0..15; the -8 is applied through XBlock::sum8
    __m256 d;
  };
  static W load(const Block& b) { return {load_nibbles(b.qs), _mm256_set1_ps(f16(b.d))}; }
  static __m256 pair(const W& w, const XBlock& x, __m256 acc) {
    const __m256i dot = _mm256_sub_epi32(dot_u8_i8(w.q, x.q), x.sum8);
    return _mm256_fmadd_ps(_mm256_mul_ps(w.d, x.d), _mm256_cvtepi32_ps(dot), acc);
  }
};

// d broadcast, and (d, m, 0, ..., 0), of a block that starts with an f16 d
// followed by an f16 m (Q4_1, Q5_1).
template <typename Block>
inline void load_dm(const Block& b, __m256& d, __m256& dm) {
  uint32_t bits;
  __builtin_memcpy(&bits, &b.d, 4);
  const __m128 dmf = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(bits)));
  d = _mm256_broadcastss_ps(dmf);
  dm = _mm256_zextps128_ps256(dmf);
}

struct Q4_1 {
  using Block = BlockQ4_1;
  struct W {
    __m256i q;
    __m256 d;
    __m256 dm;  // (d, m, 0, ..., 0)
  };
  static W load(const Block& b) {
    W w;
    w.q = load_nibbles(b.qs);
    load_dm(b, w.d, w.dm);
    return w;
  }
  static __m256 pair(const W& w, const XBlock& x, __m256 acc) {
    acc = _mm256_fmadd_ps(w.dm, x.s_lane1, acc);
    return _mm256_fmadd_ps(_mm256_mul_ps(w.d, x.d), _mm256_cvtepi32_ps(dot_u8_i8(w.q, x.q)), acc);
  }
};

struct Q5_0 {
  using Block = BlockQ5_0;
  struct W {
    __m256i q;  // 0..31; the -16 is applied through 2 * XBlock::sum8
    __m256 d;
  };
  static W load(const Block& b) {
    return {_mm256_or_si256(load_nibbles(b.qs), load_high_bits(b.qh)), _mm256_set1_ps(f16(b.d))};
  }
  static __m256 pair(const W& w, const XBlock& x, __m256 acc) {
    const __m256i dot = _mm256_sub_epi32(dot_u8_i8(w.q, x.q), _mm256_slli_epi32(x.sum8, 1));
    return _mm256_fmadd_ps(_mm256_mul_ps(w.d, x.d), _mm256_cvtepi32_ps(dot), acc);
  }
};

// Q4_1's arithmetic on 5-bit values.
struct Q5_1 {
  using Block = BlockQ5_1;
  using W = Q4_1::W;  // q in 0..31
  static W load(const Block& b) {
    W w;
    w.q = _mm256_or_si256(load_nibbles(b.qs), load_high_bits(b.qh));
    load_dm(b, w.d, w.dm);
    return w;
  }
  static __m256 pair(const W& w, const XBlock& x, __m256 acc) { return Q4_1::pair(w, x, acc); }
};

struct Q8_0 {
  using Block = BlockQ8_0;
  struct W {
    __m256i q;    // signed weights
    __m256i abs;  // |q|: vpmaddubsw needs an unsigned operand, so the sign moves to x
    __m256 d;
  };
  static W load(const Block& b) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
    return {q, _mm256_sign_epi8(q, q), _mm256_set1_ps(f16(b.d))};
  }
  static __m256 pair(const W& w, const XBlock& x, __m256 acc) {
    const __m256i dot = dot_u8_i8(w.abs, _mm256_sign_epi8(x.q, w.q));
    return _mm256_fmadd_ps(_mm256_mul_ps(w.d, x.d), _mm256_cvtepi32_ps(dot), acc);
  }
};

template <typename F, int NW, int NX>
void tile_fixed(const uint8_t* w, size_t w_row_bytes, const BlockQ8_1* x, size_t x_row_blocks,
                int64_t nb, float* y, size_t y_stride) {
  using Block = typename F::Block;
  __m256 acc[NX][NW];
  for (int xi = 0; xi < NX; ++xi)
    for (int wi = 0; wi < NW; ++wi) acc[xi][wi] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    XBlock xb[NX];
    for (int xi = 0; xi < NX; ++xi) xb[xi] = load_x(x[xi * x_row_blocks + b]);
    for (int wi = 0; wi < NW; ++wi) {
      const auto* row = reinterpret_cast<const Block*>(w + wi * w_row_bytes);
      const typename F::W wb = F::load(row[b]);
      for (int xi = 0; xi < NX; ++xi) acc[xi][wi] = F::pair(wb, xb[xi], acc[xi][wi]);
    }
  }
  for (int xi = 0; xi < NX; ++xi)
    for (int wi = 0; wi < NW; ++wi) y[xi * y_stride + wi] = hsum(acc[xi][wi]);
}

// Two activation rows per tile: with four weight rows that is 8 accumulators,
// what 16 ymm registers hold without spilling.
constexpr int kTileX = 2;

template <typename F>
void tile(const void* w, size_t w_row_bytes, int nw, const BlockQ8_1* x, size_t x_row_blocks,
          int nx, int64_t nb, float* y, size_t y_stride) {
  using Fn = void (*)(const uint8_t*, size_t, const BlockQ8_1*, size_t, int64_t, float*, size_t);
  static constexpr Fn table[kMaxTileW][kTileX] = {
      {tile_fixed<F, 1, 1>, tile_fixed<F, 1, 2>},
      {tile_fixed<F, 2, 1>, tile_fixed<F, 2, 2>},
      {tile_fixed<F, 3, 1>, tile_fixed<F, 3, 2>},
      {tile_fixed<F, 4, 1>, tile_fixed<F, 4, 2>},
  };
  const auto* wb = static_cast<const uint8_t*>(w);
  // Callers may pass up to kMaxTileX activation rows: take them kTileX at a time.
  for (int x0 = 0; x0 < nx; x0 += kTileX) {
    const int n = nx - x0 < kTileX ? nx - x0 : kTileX;
    table[nw - 1][n - 1](wb, w_row_bytes, x + x0 * x_row_blocks, x_row_blocks, nb,
                         y + x0 * y_stride, y_stride);
  }
}

// K-quants against Q8_K, straight from the blocks (no unpacked copy): per 32
// weights one vpmaddubsw (u8 quant x i8 activation, pairs to i16, at most
// 2 * 63 * 128) and one vpmaddwd with that run's scales (to i32), so the
// scaled integer sum of a super-block stays exact in 8 lanes; the offset term
// (Q2_K/Q4_K/Q5_K: mins, Q6_K: 32 * scale, Q3_K: 4 * scale, signed) is one
// more vpmaddwd with the activation's sums per 16. A first version unpacked each super-block into a
// buffer (quants, 128 scale lanes) for kernels shared by all three formats:
// 5-8 GB/s per core, most of it spent building and storing the buffer.

// Sub-block scales or minimums of Q4_K/Q5_K as i16, each repeated over the two
// groups of 16 it covers: (v0, v0, v1, v1, ..., v7, v7).
inline __m256i pairs_of_16(const uint8_t* v8) {
  uint64_t bytes;
  __builtin_memcpy(&bytes, v8, 8);
  const __m128i w = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(bytes)));
  return _mm256_set_m128i(_mm_unpackhi_epi16(w, w), _mm_unpacklo_epi16(w, w));
}

template <int NX>
struct KAcc {
  __m256i isum[NX];  // sum of scale * q * qx, this super-block
  __m256 acc[NX];    // the row's result so far
};

// Adds the 32 weights q (u8) times scale (i16 lanes) against activation quants
// at offset `at` of each row's block b.
template <int NX>
inline void k_step(KAcc<NX>& a, __m256i q, __m256i scale, const BlockQ8K* const* xb, int at) {
  for (int xi = 0; xi < NX; ++xi) {
    const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[xi]->qs + at));
    a.isum[xi] = _mm256_add_epi32(a.isum[xi], _mm256_madd_epi16(_mm256_maddubs_epi16(q, qx), scale));
  }
}

// Closes a super-block: acc += dx * (d * isum - dmin * sum(offset16 * bsums)).
template <int NX>
inline void k_finish(KAcc<NX>& a, __m256i offset16, float d, float dmin, const BlockQ8K* const* xb) {
  for (int xi = 0; xi < NX; ++xi) {
    const __m256i off =
        _mm256_madd_epi16(offset16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[xi]->bsums)));
    a.acc[xi] = _mm256_fmadd_ps(_mm256_set1_ps(xb[xi]->d * d), _mm256_cvtepi32_ps(a.isum[xi]), a.acc[xi]);
    a.acc[xi] = _mm256_fnmadd_ps(_mm256_set1_ps(xb[xi]->d * dmin), _mm256_cvtepi32_ps(off), a.acc[xi]);
  }
}

// Q4_K (HighBits false) and Q5_K: chunk c of 64 weights is the low nibbles of
// qs[32c ..] (sub-block 2c) and their high nibbles (2c + 1); Q5_K adds bit 2c
// or 2c + 1 of qh[l] as 16.
template <bool HighBits>
struct K4Format {
  using Block = std::conditional_t<HighBits, BlockQ5K, BlockQ4K>;
  template <int NX>
  static void block(const Block& w, const BlockQ8K* const* xb, KAcc<NX>& a) {
    uint8_t sc[8], mn[8];
    unpack_k4_scales(w.scales, sc, mn);
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256i qh;
    if constexpr (HighBits) qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qh));
    for (int c = 0; c < 4; ++c) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qs + 32 * c));
      __m256i lo = _mm256_and_si256(v, low4);
      __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
      if constexpr (HighBits) {
        const __m256i bits = _mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * c));  // bit 0: lo's, bit 1: hi's
        lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(bits, _mm256_set1_epi8(1)), 4));
        hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(bits, _mm256_set1_epi8(2)), 3));
      }
      k_step(a, lo, _mm256_set1_epi16(sc[2 * c]), xb, 64 * c);
      k_step(a, hi, _mm256_set1_epi16(sc[2 * c + 1]), xb, 64 * c + 32);
    }
    k_finish(a, pairs_of_16(mn), f16(w.d), f16(w.dmin), xb);
  }
};

// Scale lanes (16 x i16, one vpmaddwd operand) for groups g and g + 1 of 16
// weights, g even, from sc16 (the 16 groups' scales as i16): i32 lane g / 2
// of sc16 holds both; spread it, then give the low 128 bits sc[g], the high
// ones sc[g + 1].
inline __m256i scales_of_group_pair(__m256i sc16, int g) {
  const __m256i pick = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,  //
                                        2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
  return _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(sc16, _mm256_set1_epi32(g / 2)), pick);
}

// Q6_K: half h of 128 weights; quarter k of 32 takes the low (k < 2) or high
// nibbles of ql[64h + 32 (k & 1) ..] and bits 2k, 2k + 1 of qh[32h ..], and
// covers groups 8h + 2k, 8h + 2k + 1 of 16 (scales sc[g]). w = d sc (q - 32):
// the -32 is the offset term with offset 32 * sc and dmin = d.
struct K6Format {
  using Block = BlockQ6K;
  template <int NX>
  static void block(const Block& w, const BlockQ8K* const* xb, KAcc<NX>& a) {
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales)));
    const __m256i low4 = _mm256_set1_epi8(0x0F), low2 = _mm256_set1_epi8(3);
    for (int h = 0; h < 2; ++h) {
      const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.ql + 64 * h));
      const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.ql + 64 * h + 32));
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qh + 32 * h));
      const __m256i q[4] = {
          _mm256_or_si256(_mm256_and_si256(l0, low4), _mm256_slli_epi16(_mm256_and_si256(qh, low2), 4)),
          _mm256_or_si256(_mm256_and_si256(l1, low4),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), low2), 4)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), low2), 4)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), low2), 4)),
      };
      for (int k = 0; k < 4; ++k) {
        k_step(a, q[k], scales_of_group_pair(sc16, 8 * h + 2 * k), xb, 128 * h + 32 * k);
      }
    }
    k_finish(a, _mm256_slli_epi16(sc16, 5), f16(w.d), f16(w.d), xb);
  }
};

// Q2_K's and Q3_K's two low bits of the 32 weights from 128h + 32j: bits
// 2j, 2j + 1 of v = qs[32h .. 32h + 31] (the 16-bit shift's spill from the
// next byte is masked off).
inline __m256i two_bits(__m256i v, int j) {
  return _mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(2 * j)), _mm256_set1_epi8(3));
}

// Q2_K: the 32 weights from 128h + 32j are bits 2j, 2j + 1 of qs[32h ..]
// and cover groups 8h + 2j, 8h + 2j + 1 of 16; a group's scale byte holds its
// scale (low nibble) and minimum (high): w = d sc q - dmin min.
struct K2Format {
  using Block = BlockQ2K;
  template <int NX>
  static void block(const Block& w, const BlockQ8K* const* xb, KAcc<NX>& a) {
    const __m256i bytes = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales)));
    const __m256i sc16 = _mm256_and_si256(bytes, _mm256_set1_epi16(0x0F));
    for (int h = 0; h < 2; ++h) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qs + 32 * h));
      for (int j = 0; j < 4; ++j) {
        k_step(a, two_bits(v, j), scales_of_group_pair(sc16, 8 * h + 2 * j), xb, 128 * h + 32 * j);
      }
    }
    k_finish(a, _mm256_srli_epi16(bytes, 4), f16(w.d), f16(w.dmin), xb);
  }
};

// Q3_K: Q2_K's two low bits, plus bit e / 32 of hmask[e % 32] as bit 2, so
// q = 0..7 and w = d sc (q - 4) with the signed 6-bit scales of
// q3_k_biased_scale_words (low_bit_kquants.hpp): the -4 is the offset term with offset
// 4 * sc and dmin = d, as Q6_K's -32.
struct K3Format {
  using Block = BlockQ3K;
  template <int NX>
  static void block(const Block& w, const BlockQ8K* const* xb, KAcc<NX>& a) {
    uint32_t words[4];  // into a register as they are: a byte array stored and reloaded stalled store forwarding
    q3_k_biased_scale_words(w.scales, words);
    const __m128i biased = _mm_setr_epi32(static_cast<int>(words[0]), static_cast<int>(words[1]),
                                          static_cast<int>(words[2]), static_cast<int>(words[3]));
    const __m256i sc16 = _mm256_sub_epi16(_mm256_cvtepu8_epi16(biased), _mm256_set1_epi16(32));
    const __m256i hmask = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.hmask));
    const __m256i one = _mm256_set1_epi8(1);
    for (int h = 0; h < 2; ++h) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qs + 32 * h));
      for (int j = 0; j < 4; ++j) {
        const __m256i low = two_bits(v, j);
        const __m256i high = _mm256_and_si256(_mm256_srl_epi16(hmask, _mm_cvtsi32_si128(4 * h + j)), one);
        const __m256i q = _mm256_or_si256(low, _mm256_slli_epi16(high, 2));
        k_step(a, q, scales_of_group_pair(sc16, 8 * h + 2 * j), xb, 128 * h + 32 * j);
      }
    }
    k_finish(a, _mm256_slli_epi16(sc16, 2), f16(w.d), f16(w.d), xb);
  }
};

template <typename F, int NX>
void kquant_tile_fixed(const uint8_t* w, size_t w_row_bytes, int nw, const BlockQ8K* x, size_t x_row_blocks,
                       int64_t nb, float* y, size_t y_stride) {
  for (int wi = 0; wi < nw; ++wi) {
    const auto* row = reinterpret_cast<const typename F::Block*>(w + wi * w_row_bytes);
    KAcc<NX> a;
    for (int xi = 0; xi < NX; ++xi) a.acc[xi] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const BlockQ8K* xb[NX];
      for (int xi = 0; xi < NX; ++xi) {
        xb[xi] = x + xi * x_row_blocks + b;
        a.isum[xi] = _mm256_setzero_si256();
      }
      F::block(row[b], xb, a);
    }
    for (int xi = 0; xi < NX; ++xi) y[xi * y_stride + wi] = hsum(a.acc[xi]);
  }
}

template <typename F>
void kquant_tile(const void* w, size_t w_row_bytes, int nw, const BlockQ8K* x, size_t x_row_blocks, int nx,
                 int64_t nb, float* y, size_t y_stride) {
  using Fn = void (*)(const uint8_t*, size_t, int, const BlockQ8K*, size_t, int64_t, float*, size_t);
  static constexpr Fn table[kMaxTileX] = {kquant_tile_fixed<F, 1>, kquant_tile_fixed<F, 2>, kquant_tile_fixed<F, 3>,
                                          kquant_tile_fixed<F, 4>};
  table[nx - 1](static_cast<const uint8_t*>(w), w_row_bytes, nw, x, x_row_blocks, nb, y, y_stride);
}

// The largest of 8 floats.
inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// The sum of 8 i32 lanes.
inline int hsum_i32(__m256i v) {
  __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
  return _mm_cvtsi128_si32(s4);
}

// 32 floats times id, rounded half to even as nearbyint does, as i32 in q[4].
inline void round_32(const float* x, __m256 id, __m256i q[4]) {
  for (int i = 0; i < 4; ++i)
    q[i] = _mm256_cvtps_epi32(
        _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * i), id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// 32 i32 (each within i8) to 32 i8 in order: packs interleave 128-bit lanes, the permute undoes it.
inline void store_i8x32(const __m256i q[4], int8_t* dst) {
  const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst),
                      _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

// max|x| over n floats (a multiple of 8).
inline float abs_max(const float* x, int n) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  __m256 amax = _mm256_setzero_ps();
  for (int i = 0; i < n; i += 8) amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign_mask, _mm256_loadu_ps(x + i)));
  return hmax(amax);
}

void quantize_q8_1(const float* x, BlockQ8_1* y, int64_t n) {
  for (int64_t b = 0; b < n / kBlock; ++b, x += kBlock) {
    const float d = abs_max(x, kBlock) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    __m256i q[4];
    round_32(x, _mm256_set1_ps(id), q);
    // Sum of the 32 quantized values, exact in i32.
    const int sum = hsum_i32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
    store_i8x32(q, y[b].qs);
    const uint16_t d16 = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);
    y[b].d = d16;
    y[b].s = _cvtss_sh(_cvtsh_ss(d16) * static_cast<float>(sum), _MM_FROUND_TO_NEAREST_INT);
  }
}

// As quantize_row_q8_k: one f32 d per 256 values, the quants' sums per 16.
void quantize_q8_k(const float* x, BlockQ8K* y, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b, x += kSuperBlock) {
    const float d = abs_max(x, kSuperBlock) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = d;
    const __m256 idv = _mm256_set1_ps(id);
    for (int c = 0; c < kSuperBlock / 32; ++c) {
      __m256i q[4];
      round_32(x + 32 * c, idv, q);
      store_i8x32(q, y[b].qs + 32 * c);
      y[b].bsums[2 * c] = static_cast<int16_t>(hsum_i32(_mm256_add_epi32(q[0], q[1])));
      y[b].bsums[2 * c + 1] = static_cast<int16_t>(hsum_i32(_mm256_add_epi32(q[2], q[3])));
    }
  }
}

float dot_f32(const void* w, const float* x, int64_t n) {
  const auto* wf = static_cast<const float*>(w);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(wf + i), _mm256_loadu_ps(x + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(wf + i + 8), _mm256_loadu_ps(x + i + 8), acc1);
  }
  float sum = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) sum += wf[i] * x[i];
  return sum;
}

// Block-format rows with f32 activations (KernelTable::q4_0_f32, ...). A
// block's 32 weights are four 8-lane quarters; dot_f32 adds quarters 0 and 2
// into acc0 and 1 and 3 into acc1, and so does this, so the result is
// dequantize + dot_f32 to the bit. d * q is exact in f32 (an f16 scale has an
// 11-bit significand, q at most 8 bits): d * q + m rounds once, fused or not.
inline __m256i widen8(const void* p, bool is_signed) {  // 8 bytes -> 8 x i32
  const __m128i b = _mm_loadl_epi64(static_cast<const __m128i*>(p));
  return is_signed ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
}

inline __m256 scaled(__m256i q, __m256 d) { return _mm256_mul_ps(_mm256_cvtepi32_ps(q), d); }

struct Q4_0Weights {
  using Block = BlockQ4_0;
  static void load(const Block& b, __m256 w[4]) {
    const __m256 d = _mm256_set1_ps(f16(b.d));
    const __m256i low = _mm256_set1_epi32(0x0F), eight = _mm256_set1_epi32(8);
    for (int half = 0; half < 2; ++half) {
      const __m256i q = widen8(b.qs + 8 * half, false);
      w[half] = scaled(_mm256_sub_epi32(_mm256_and_si256(q, low), eight), d);
      w[half + 2] = scaled(_mm256_sub_epi32(_mm256_srli_epi32(q, 4), eight), d);
    }
  }
};

struct Q4_1Weights {
  using Block = BlockQ4_1;
  static void load(const Block& b, __m256 w[4]) {
    const __m256 d = _mm256_set1_ps(f16(b.d)), m = _mm256_set1_ps(f16(b.m));
    const __m256i low = _mm256_set1_epi32(0x0F);
    for (int half = 0; half < 2; ++half) {
      const __m256i q = widen8(b.qs + 8 * half, false);
      w[half] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(q, low)), d, m);
      w[half + 2] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(q, 4)), d, m);
    }
  }
};

struct Q8_0Weights {
  using Block = BlockQ8_0;
  static void load(const Block& b, __m256 w[4]) {
    const __m256 d = _mm256_set1_ps(f16(b.d));
    for (int i = 0; i < 4; ++i) w[i] = scaled(widen8(b.qs + 8 * i, true), d);
  }
};

template <typename Weights>
float dot_blocks_f32(const void* w, const float* x, int64_t n) {
  const auto* blocks = static_cast<const typename Weights::Block*>(w);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kBlock; ++b) {
    __m256 q[4];
    Weights::load(blocks[b], q);
    const float* xb = x + kBlock * b;
    acc0 = _mm256_fmadd_ps(q[0], _mm256_loadu_ps(xb), acc0);
    acc1 = _mm256_fmadd_ps(q[1], _mm256_loadu_ps(xb + 8), acc1);
    acc0 = _mm256_fmadd_ps(q[2], _mm256_loadu_ps(xb + 16), acc0);
    acc1 = _mm256_fmadd_ps(q[3], _mm256_loadu_ps(xb + 24), acc1);
  }
  return hsum(_mm256_add_ps(acc0, acc1));
}

// NW weight rows against one activation row at a time, each pair with
// dot_f32's two accumulators (elements 0..7 and 8..15 of every 16): sixteen
// ymm registers hold 2 NW accumulators, the x vectors and one w vector.
template <int NW>
void f32_tile_fixed(const float* w, size_t w_stride, const float* x, int64_t n, float* y) {
  __m256 acc0[NW], acc1[NW];
  for (int wi = 0; wi < NW; ++wi) acc0[wi] = acc1[wi] = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    const __m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + 8);
    for (int wi = 0; wi < NW; ++wi) {
      acc0[wi] = _mm256_fmadd_ps(_mm256_loadu_ps(w + wi * w_stride + i), x0, acc0[wi]);
      acc1[wi] = _mm256_fmadd_ps(_mm256_loadu_ps(w + wi * w_stride + i + 8), x1, acc1[wi]);
    }
  }
  for (int wi = 0; wi < NW; ++wi) y[wi] = hsum(_mm256_add_ps(acc0[wi], acc1[wi]));
}

void f32_tile(const float* w, size_t w_stride, int nw, const float* x, size_t x_stride, int nx, int64_t n, float* y,
              size_t y_stride) {
  using Fn = void (*)(const float*, size_t, const float*, int64_t, float*);
  static constexpr Fn kByRows[kMaxFloatTileW] = {&f32_tile_fixed<1>, &f32_tile_fixed<2>, &f32_tile_fixed<3>,
                                                 &f32_tile_fixed<4>};
  for (int xi = 0; xi < nx; ++xi) kByRows[nw - 1](w, w_stride, x + xi * x_stride, n, y + xi * y_stride);
}

float dot_f16(const void* w, const float* x, int64_t n) {
  const auto* wh = static_cast<const uint16_t*>(w);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wh + i)));
    const __m256 w1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wh + i + 8)));
    acc0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + i), acc0);
    acc1 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + i + 8), acc1);
  }
  float sum = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) sum += f16(wh[i]) * x[i];
  return sum;
}

inline __m256 bf16x8(const uint16_t* p) {  // bf16 is the top half of an f32
  const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

float dot_bf16(const void* w, const float* x, int64_t n) {
  const auto* wh = static_cast<const uint16_t*>(w);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(bf16x8(wh + i), _mm256_loadu_ps(x + i), acc0);
    acc1 = _mm256_fmadd_ps(bf16x8(wh + i + 8), _mm256_loadu_ps(x + i + 8), acc1);
  }
  float sum = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) {
    const uint32_t bits = static_cast<uint32_t>(wh[i]) << 16;
    float f;
    __builtin_memcpy(&f, &bits, 4);
    sum += f * x[i];
  }
  return sum;
}

#define TESSERA_GGML_VNNI 0
#include "kernels_repack_impl.hpp"
#include "activation_row_impl.hpp"

}  // namespace

const KernelTable& avx2_kernel_table() {
  static const KernelTable table{
      IsaLevel::avx2, "avx2", kTileX, &quantize_q8_1, &tile<Q4_0>, &tile<Q4_1>, &tile<Q8_0>,
      &dot_f32, &dot_f16, &dot_bf16, repack::q4_1x8, repack::q8_0x8, nullptr, nullptr,
      &dot_blocks_f32<Q4_0Weights>, &dot_blocks_f32<Q4_1Weights>, &dot_blocks_f32<Q8_0Weights>, &f32_tile,
      &tile<Q5_0>, &tile<Q5_1>,
      &kquant_tile<K4Format<false>>, &kquant_tile<K4Format<true>>, &kquant_tile<K6Format>,
      nullptr, nullptr,  // the 16-row Q5 layouts need AVX-512 VNNI
      repack::q5_0x8, repack::q5_1x8, &quantize_q8_k,
      &q4_kx8_avx2, &q6_kx8_avx2, &q5_kx8_avx2,
      nullptr, nullptr, nullptr,  // K-quant panels: the amx level's only
      &kquant_tile<K2Format>, &kquant_tile<K3Format>,
      &q2_kx8_avx2, &q3_kx8_avx2,
      nullptr, nullptr, nullptr, nullptr, nullptr,  // the K-quant pairs need AVX-512 VNNI
      nullptr, nullptr,  // f16/bf16 tiles: rows widened into scratch for f32_tile instead
      repack::q4_0x8, nullptr,  // Q4_0's 16-row layout needs AVX-512 VNNI
      &activation_row::quantize_row<&quantize_q8_1>,

      nullptr, nullptr, nullptr, nullptr, nullptr,  // block panels: the amx level's
  };
  return table;
}

}  // namespace tessera::ggml
