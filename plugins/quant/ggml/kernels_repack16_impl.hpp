// kernels_repack16_impl.hpp: kernels for the 16-row repacked layouts
// (blocks.hpp: BlockQ4_0x16, BlockQ4_1x16, BlockQ8_0x16, BlockQ5_0x16,
// BlockQ5_1x16), 512-bit
// wide, AVX-512 VNNI only.
// Included inside the anonymous namespace of kernels_avx512_vnni.cpp, after
// kernels_repack_impl.hpp (whose by_nx it reuses).
//
// As in the 8-row kernels, i32 lane r of every accumulator is row r of the
// group. One zmm vpdpbusd does 64 multiply-adds where the ymm kernel did 32,
// so a block needs half the activation broadcasts and half the scale steps per
// multiply-add; the loop is otherwise the same (quant group k outer,
// activation row inner; two chains per row when NX <= 4).
#pragma once

#include <immintrin.h>

#include "blocks.hpp"
#include "kernels.hpp"

namespace repack16 {

inline __m512i broadcast4(const int8_t* p) {  // quants p[0..3] in every i32 lane
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

#include "repack16_nibbles.hpp"  // scales16, split_nibbles (shared with the AMX panels)

// Weights stored as q + 128: vpdpbusd gives sum((q + 128) * x), and the block's
// 128 * sum(x) (precomputed per activation block) is taken off in i32, exactly.
template <int NX>
void q8_0x16_fixed(const void* group, int64_t nb, const tessera::ggml::BlockQ8_1* x,
                   const tessera::ggml::ActivationScales* xs, size_t x_row_blocks, float* y, size_t y_stride,
                   tessera::ggml::StreamAhead ahead) {
  using Blocks = tessera::ggml::GroupBlocks<tessera::ggml::BlockQ8_0x16Pair>;
  constexpr bool kTwoChains = NX <= 4;
  __m512 acc[NX];
#pragma GCC unroll 8
  for (int xi = 0; xi < NX; ++xi) acc[xi] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint16_t* wd = Blocks::d(group, nb, b);
    const uint8_t* wq = Blocks::qs(group, nb, b);
    repack::prefetch_ahead<repack::lines_per_block(Blocks::kBlockBytes)>(wq, ahead);
    const int8_t* xq[NX];
#pragma GCC unroll 8
    for (int xi = 0; xi < NX; ++xi) xq[xi] = x[xi * x_row_blocks + b].qs;
    __m512i dot[NX], dot_odd[kTwoChains ? NX : 1];
#pragma GCC unroll 8
    for (int xi = 0; xi < NX; ++xi) {
      dot[xi] = _mm512_set1_epi32(xs[xi * x_row_blocks + b].q_offset);  // -128 * sum(x quants)
      if constexpr (kTwoChains) dot_odd[xi] = _mm512_setzero_si512();
    }
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      const __m512i u = _mm512_loadu_si512(wq + 64 * k);  // q + 128, unsigned
#pragma GCC unroll 8
      for (int xi = 0; xi < NX; ++xi) {
        __m512i& chain = kTwoChains && (k & 1) ? dot_odd[kTwoChains ? xi : 0] : dot[xi];
        chain = _mm512_dpbusd_epi32(chain, u, broadcast4(xq[xi] + 4 * k));
      }
    }
    const __m512 d = scales16(wd);
#pragma GCC unroll 8
    for (int xi = 0; xi < NX; ++xi) {
      const __m512i sum = kTwoChains ? _mm512_add_epi32(dot[xi], dot_odd[kTwoChains ? xi : 0]) : dot[xi];
      const __m512 dx = _mm512_set1_ps(xs[xi * x_row_blocks + b].d);
      acc[xi] = _mm512_fmadd_ps(_mm512_mul_ps(d, dx), _mm512_cvtepi32_ps(sum), acc[xi]);
    }
  }
  for (int xi = 0; xi < NX; ++xi) _mm512_storeu_ps(y + xi * y_stride, acc[xi]);
}

// The nibble layouts, 16 rows: Q4_0 (w = d (q - 8)), Q4_1 (w = d q + m), Q5_0
// (w = d (q - 16)) and Q5_1 (w = d q + m, q in 0..31). Chunk k of qs holds
// quants 4k..4k+3 of each row in the low nibbles and 16+4k.. in the high
// ones; the Q5 layouts OR in 16 where the chunk's byte mask
// (BlockQ5_0x16::qh) has the row's fifth bit. Q4_1/Q5_1's minimum adds m * s
// per block (s = d_x * sum(q_x)); Q5_0's -16 and Q4_0's -8 are taken off
// exactly in i32: each block's sum starts at -16 (-8) * sum(x quants), the
// activation's q_offset.
template <int NX, typename Group, bool kHighBits, bool kMin>
void nibbles_x16_fixed(const void* group, int64_t nb, const tessera::ggml::BlockQ8_1* x,
                       const tessera::ggml::ActivationScales* xs, size_t x_row_blocks, float* y, size_t y_stride,
                       tessera::ggml::StreamAhead ahead) {
  constexpr bool kTwoChains = NX <= 4;
  using Blocks = tessera::ggml::GroupBlocks<Group>;
  __m512 acc[NX];
#pragma GCC unroll 8
  for (int xi = 0; xi < NX; ++xi) acc[xi] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* wq = Blocks::qs(group, nb, b);
    repack::prefetch_ahead<repack::lines_per_block(Blocks::kBlockBytes)>(wq, ahead);
    const int8_t* xq[NX];
#pragma GCC unroll 8
    for (int xi = 0; xi < NX; ++xi) xq[xi] = x[xi * x_row_blocks + b].qs;
    __m512i dot[NX], dot_hi[kTwoChains ? NX : 1];
#pragma GCC unroll 8
    for (int xi = 0; xi < NX; ++xi) {
      dot[xi] = kMin ? _mm512_setzero_si512() : _mm512_set1_epi32(xs[xi * x_row_blocks + b].q_offset);
      if constexpr (kTwoChains) dot_hi[xi] = _mm512_setzero_si512();
    }
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {  // lo: quants 4k..4k+3 of each row, hi: quants 16+4k..
      __m512i lo, hi;
      split_nibbles<kHighBits>(wq, fifth_bit_masks<Group, kHighBits>(group, b), k, lo, hi);
#pragma GCC unroll 8
      for (int xi = 0; xi < NX; ++xi) {
        dot[xi] = _mm512_dpbusd_epi32(dot[xi], lo, broadcast4(xq[xi] + 4 * k));
        __m512i& second = kTwoChains ? dot_hi[kTwoChains ? xi : 0] : dot[xi];
        second = _mm512_dpbusd_epi32(second, hi, broadcast4(xq[xi] + 16 + 4 * k));
      }
    }
    const __m512 d = scales16(Blocks::d(group, nb, b));
    __m512 m = _mm512_setzero_ps();
    if constexpr (kMin) m = scales16(Blocks::block(group, b).m);
#pragma GCC unroll 8
    for (int xi = 0; xi < NX; ++xi) {
      const __m512i sum = kTwoChains ? _mm512_add_epi32(dot[xi], dot_hi[kTwoChains ? xi : 0]) : dot[xi];
      const tessera::ggml::ActivationScales& xsb = xs[xi * x_row_blocks + b];
      acc[xi] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(xsb.d)), _mm512_cvtepi32_ps(sum), acc[xi]);
      if constexpr (kMin) acc[xi] = _mm512_fmadd_ps(m, _mm512_set1_ps(xsb.s), acc[xi]);  // m * d_x * sum(q_x)
    }
  }
  for (int xi = 0; xi < NX; ++xi) _mm512_storeu_ps(y + xi * y_stride, acc[xi]);
}

template <int NX>
struct Q5_0x16 {
  static void run(const void* g, int64_t nb, const tessera::ggml::BlockQ8_1* x,
                  const tessera::ggml::ActivationScales* xs, size_t xb, float* y, size_t ys,
                  tessera::ggml::StreamAhead ahead) {
    nibbles_x16_fixed<NX, tessera::ggml::BlockQ5_0x16, true, false>(g, nb, x, xs, xb, y, ys, ahead);
  }
};
template <int NX>
struct Q5_1x16 {
  static void run(const void* g, int64_t nb, const tessera::ggml::BlockQ8_1* x,
                  const tessera::ggml::ActivationScales* xs, size_t xb, float* y, size_t ys,
                  tessera::ggml::StreamAhead ahead) {
    nibbles_x16_fixed<NX, tessera::ggml::BlockQ5_1x16, true, true>(g, nb, x, xs, xb, y, ys, ahead);
  }
};

template <int NX>
struct Q4_0x16 {
  static void run(const void* g, int64_t nb, const tessera::ggml::BlockQ8_1* x,
                  const tessera::ggml::ActivationScales* xs, size_t xb, float* y, size_t ys,
                  tessera::ggml::StreamAhead ahead) {
    nibbles_x16_fixed<NX, tessera::ggml::BlockQ4_0x16, false, false>(g, nb, x, xs, xb, y, ys, ahead);
  }
};
template <int NX>
struct Q4_1x16 {
  static void run(const void* g, int64_t nb, const tessera::ggml::BlockQ8_1* x,
                  const tessera::ggml::ActivationScales* xs, size_t xb, float* y, size_t ys,
                  tessera::ggml::StreamAhead ahead) {
    nibbles_x16_fixed<NX, tessera::ggml::BlockQ4_1x16, false, true>(g, nb, x, xs, xb, y, ys, ahead);
  }
};
template <int NX>
struct Q8_0x16 {
  static void run(const void* g, int64_t nb, const tessera::ggml::BlockQ8_1* x,
                  const tessera::ggml::ActivationScales* xs, size_t xb, float* y, size_t ys,
                  tessera::ggml::StreamAhead ahead) {
    q8_0x16_fixed<NX>(g, nb, x, xs, xb, y, ys, ahead);
  }
};

constexpr tessera::ggml::RepackTileFn q4_0x16 = &repack::by_nx<Q4_0x16>;
constexpr tessera::ggml::RepackTileFn q4_1x16 = &repack::by_nx<Q4_1x16>;
constexpr tessera::ggml::RepackTileFn q8_0x16 = &repack::by_nx<Q8_0x16>;
constexpr tessera::ggml::RepackTileFn q5_0x16 = &repack::by_nx<Q5_0x16>;
constexpr tessera::ggml::RepackTileFn q5_1x16 = &repack::by_nx<Q5_1x16>;

}  // namespace repack16
