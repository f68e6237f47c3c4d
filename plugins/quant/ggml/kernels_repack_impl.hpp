// kernels_repack_impl.hpp: kernels for the 8-row repacked layouts (blocks.hpp),
// 256-bit wide. Included inside the anonymous namespace of kernels_avx2.cpp
// (TESSERA_GGML_VNNI 0: vpmaddubsw + vpmaddwd) and of the two AVX-512 units
// (kernels_avx512_vnni.cpp sets TESSERA_GGML_VNNI 1: vpdpbusd on ymm, AVX512-VNNI + VL).
//
// i32 lane r of every integer accumulator is row r of the group, so a block's
// 8 results need no horizontal sum: one cvt, one multiply by the 8 rows' scales
// (one vcvtph2ps load) and one fma per block and activation row.
#pragma once

#include <immintrin.h>

#include "blocks.hpp"
#include "kernels.hpp"

#ifndef TESSERA_GGML_VNNI
#error "define TESSERA_GGML_VNNI before including kernels_repack_impl.hpp"
#endif
// Activation rows one kernel instance keeps in registers: 4 with AVX2's 16 ymm
// registers; 8 where AVX-512VL gives 32 (8 accumulators + 8 unpacked quant
// vectors + scales still fit). Larger nx are taken in chunks of this size.
#ifndef TESSERA_GGML_REPACK_TILE_X
#define TESSERA_GGML_REPACK_TILE_X 4
#endif

namespace repack {

// The kLines cache lines from `ahead.bytes` past p, unless prefetch is off or
// the first lies at or past the end of this thread's rows (kernels.hpp).
template <int kLines>
inline void prefetch_ahead(const void* p, tessera::ggml::StreamAhead ahead) {
  const uintptr_t a = ahead.target(p);
  if (a == 0) return;
#pragma GCC unroll 16
  for (int l = 0; l < kLines; ++l) _mm_prefetch(reinterpret_cast<const char*>(a + 64 * l), _MM_HINT_T0);
}

// Lines to prefetch per block of `bytes`: one more than whole lines, since a
// block need not start on a line.
constexpr int lines_per_block(size_t bytes) { return static_cast<int>(bytes / 64) + 1; }

inline __m256i broadcast4(const int8_t* p) {  // quants p[0..3] in every i32 lane
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

inline __m256 scales8(const uint16_t* h) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)));
}

// The nibble layouts, 8 rows: Q4_0 (w = d (q - 8)), Q4_1 (w = d q + m), Q5_0
// (w = d (q - 16)) and Q5_1 (w = d q + m, q in 0..31; kHighBits: 16 ORed in
// from the chunk masks, fifth_bits_impl.hpp, which the including unit
// provides). Q5_0's -16 and Q4_0's -8 are taken off exactly in i32: the
// activation's q_offset (-16 or -8 * sum(q_x)) is added to each block's sum.
//
// Loop order: quant group k outer, activation row inner, so consecutive
// integer dot instructions feed different accumulators. Written row-major
// (all of row 0's quants, then row 1's), each row's vpdpbusd formed an 8-deep
// dependency chain and the out-of-order window overlapped only two or three
// rows: the kernel ran at the instruction's latency, not its throughput. With
// few rows (NX <= 4) each row also gets two chains (low/high nibbles, even/odd k).
template <int NX, typename Group, bool kHighBits, bool kMin>
void nibbles_x8_fixed(const void* group, int64_t nb, const tessera::ggml::BlockQ8_1* x,
                      const tessera::ggml::ActivationScales* xs, size_t x_row_blocks, float* y, size_t y_stride,
                      tessera::ggml::StreamAhead ahead) {
  constexpr bool kTwoChains = TESSERA_GGML_VNNI && NX <= 4;
  using Blocks = tessera::ggml::GroupBlocks<Group>;
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256 acc[NX];
#pragma GCC unroll 8
  for (int xi = 0; xi < NX; ++xi) acc[xi] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* wq = Blocks::qs(group, nb, b);
    prefetch_ahead<lines_per_block(Blocks::kBlockBytes)>(wq, ahead);
    const int8_t* xq[NX];
#pragma GCC unroll 8
    for (int xi = 0; xi < NX; ++xi) xq[xi] = x[xi * x_row_blocks + b].qs;
    // VNNI: i32 sums per row. Otherwise vpmaddubsw results summed in i16: each
    // is at most 2 * 15 * 127 for 4-bit quants, eight of them 30480 < 32767;
    // 5-bit quants reach 2 * 31 * 127, so those widen to i32 after every two.
    __m256i dot[NX], dot_hi[kTwoChains ? NX : 1];
#pragma GCC unroll 8
    for (int xi = 0; xi < NX; ++xi) {
      dot[xi] = _mm256_setzero_si256();
      if constexpr (kTwoChains) dot_hi[xi] = _mm256_setzero_si256();
    }
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {  // lo: quants 4k..4k+3 of each row, hi: quants 16+4k..
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wq + 32 * k));
      __m256i lo = _mm256_and_si256(v, low4);
      __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
      if constexpr (kHighBits) {
        const uint32_t* qh = Blocks::block(group, b).qh;
        lo = _mm256_or_si256(lo, fifth_bits(qh[k]));
        hi = _mm256_or_si256(hi, fifth_bits(qh[4 + k]));
      }
#pragma GCC unroll 8
      for (int xi = 0; xi < NX; ++xi) {
#if TESSERA_GGML_VNNI
        dot[xi] = _mm256_dpbusd_epi32(dot[xi], lo, broadcast4(xq[xi] + 4 * k));
        __m256i& second = kTwoChains ? dot_hi[kTwoChains ? xi : 0] : dot[xi];
        second = _mm256_dpbusd_epi32(second, hi, broadcast4(xq[xi] + 16 + 4 * k));
#else
        const __m256i pairs = _mm256_add_epi16(_mm256_maddubs_epi16(lo, broadcast4(xq[xi] + 4 * k)),
                                               _mm256_maddubs_epi16(hi, broadcast4(xq[xi] + 16 + 4 * k)));
        if constexpr (kHighBits) {
          dot[xi] = _mm256_add_epi32(dot[xi], _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
        } else {
          dot[xi] = _mm256_add_epi16(dot[xi], pairs);
        }
#endif
      }
    }
    const __m256 d = scales8(Blocks::d(group, nb, b));
    __m256 m = _mm256_setzero_ps();
    if constexpr (kMin) m = scales8(Blocks::block(group, b).m);
#pragma GCC unroll 8
    for (int xi = 0; xi < NX; ++xi) {
#if TESSERA_GGML_VNNI
      __m256i sum = kTwoChains ? _mm256_add_epi32(dot[xi], dot_hi[kTwoChains ? xi : 0]) : dot[xi];
#else
      __m256i sum = kHighBits ? dot[xi] : _mm256_madd_epi16(dot[xi], _mm256_set1_epi16(1));
#endif
      const tessera::ggml::ActivationScales& xsb = xs[xi * x_row_blocks + b];
      if constexpr (!kMin) sum = _mm256_add_epi32(sum, _mm256_set1_epi32(xsb.q_offset));
      acc[xi] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(xsb.d)), _mm256_cvtepi32_ps(sum), acc[xi]);
      if constexpr (kMin) acc[xi] = _mm256_fmadd_ps(m, _mm256_set1_ps(xsb.s), acc[xi]);  // m * d_x * sum(q_x)
    }
  }
  for (int xi = 0; xi < NX; ++xi) _mm256_storeu_ps(y + xi * y_stride, acc[xi]);
}

template <int NX>
void q8_0x8_fixed(const void* group, int64_t nb, const tessera::ggml::BlockQ8_1* x,
                  const tessera::ggml::ActivationScales* xs, size_t x_row_blocks, float* y, size_t y_stride,
                  tessera::ggml::StreamAhead ahead) {
  using tessera::ggml::BlockQ8_0x8;
  constexpr bool kTwoChains = TESSERA_GGML_VNNI && NX <= 4;
  const auto* w = static_cast<const BlockQ8_0x8*>(group);
  __m256 acc[NX];
#pragma GCC unroll 8
  for (int xi = 0; xi < NX; ++xi) acc[xi] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ8_0x8& wb = w[b];
    prefetch_ahead<lines_per_block(sizeof(BlockQ8_0x8))>(&wb, ahead);
    const int8_t* xq[NX];
#pragma GCC unroll 8
    for (int xi = 0; xi < NX; ++xi) xq[xi] = x[xi * x_row_blocks + b].qs;
    __m256i dot[NX], dot_odd[kTwoChains ? NX : 1];
#pragma GCC unroll 8
    for (int xi = 0; xi < NX; ++xi) {
      dot[xi] = _mm256_setzero_si256();
      if constexpr (kTwoChains) dot_odd[xi] = _mm256_setzero_si256();
    }
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qs + 32 * k));  // signed quants
      const __m256i a = _mm256_sign_epi8(q, q);  // their magnitudes (the unsigned operand)
#pragma GCC unroll 8
      for (int xi = 0; xi < NX; ++xi) {
        const __m256i sx = _mm256_sign_epi8(broadcast4(xq[xi] + 4 * k), q);  // x carries w's sign
#if TESSERA_GGML_VNNI
        __m256i& chain = kTwoChains && (k & 1) ? dot_odd[kTwoChains ? xi : 0] : dot[xi];
        chain = _mm256_dpbusd_epi32(chain, a, sx);
#else
        dot[xi] = _mm256_add_epi32(dot[xi], _mm256_madd_epi16(_mm256_maddubs_epi16(a, sx), _mm256_set1_epi16(1)));
#endif
      }
    }
    const __m256 d = scales8(wb.d);
#pragma GCC unroll 8
    for (int xi = 0; xi < NX; ++xi) {
      const __m256i sum = kTwoChains ? _mm256_add_epi32(dot[xi], dot_odd[kTwoChains ? xi : 0]) : dot[xi];
      const __m256 dx = _mm256_set1_ps(xs[xi * x_row_blocks + b].d);
      acc[xi] = _mm256_fmadd_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(sum), acc[xi]);
    }
  }
  for (int xi = 0; xi < NX; ++xi) _mm256_storeu_ps(y + xi * y_stride, acc[xi]);
}

using GroupFn = void (*)(const void*, int64_t, const tessera::ggml::BlockQ8_1*, const tessera::ggml::ActivationScales*,
                         size_t, float*, size_t, tessera::ggml::StreamAhead);

// nx <= tile_x rows in one call of the matching instance, larger nx in chunks.
template <template <int> class K>
void by_nx(const void* group, int64_t nb, const tessera::ggml::BlockQ8_1* x, const tessera::ggml::ActivationScales* xs,
           size_t x_row_blocks, int nx, float* y, size_t y_stride, tessera::ggml::StreamAhead ahead) {
  constexpr int kTile = TESSERA_GGML_REPACK_TILE_X;
  static constexpr GroupFn table[8] = {K<1>::run, K<2>::run, K<3>::run, K<4>::run,
                                       K<kTile >= 5 ? 5 : 1>::run, K<kTile >= 6 ? 6 : 1>::run,
                                       K<kTile >= 7 ? 7 : 1>::run, K<kTile >= 8 ? 8 : 1>::run};
  for (int x0 = 0; x0 < nx; x0 += kTile) {
    const int n = nx - x0 < kTile ? nx - x0 : kTile;
    // Only the first tile of rows streams the weights; the others find them in cache.
    table[n - 1](group, nb, x + x0 * x_row_blocks, xs + x0 * x_row_blocks, x_row_blocks, y + x0 * y_stride, y_stride,
                 x0 == 0 ? ahead : tessera::ggml::StreamAhead{});
  }
}

template <int NX>
struct Q4_0x8 {
  static void run(const void* g, int64_t nb, const tessera::ggml::BlockQ8_1* x,
                  const tessera::ggml::ActivationScales* xs, size_t xb, float* y, size_t ys,
                  tessera::ggml::StreamAhead ahead) {
    nibbles_x8_fixed<NX, tessera::ggml::BlockQ4_0x8, false, false>(g, nb, x, xs, xb, y, ys, ahead);
  }
};
template <int NX>
struct Q4_1x8 {
  static void run(const void* g, int64_t nb, const tessera::ggml::BlockQ8_1* x,
                  const tessera::ggml::ActivationScales* xs, size_t xb, float* y, size_t ys,
                  tessera::ggml::StreamAhead ahead) {
    nibbles_x8_fixed<NX, tessera::ggml::BlockQ4_1x8, false, true>(g, nb, x, xs, xb, y, ys, ahead);
  }
};
template <int NX>
struct Q5_0x8 {
  static void run(const void* g, int64_t nb, const tessera::ggml::BlockQ8_1* x,
                  const tessera::ggml::ActivationScales* xs, size_t xb, float* y, size_t ys,
                  tessera::ggml::StreamAhead ahead) {
    nibbles_x8_fixed<NX, tessera::ggml::BlockQ5_0x8, true, false>(g, nb, x, xs, xb, y, ys, ahead);
  }
};
template <int NX>
struct Q5_1x8 {
  static void run(const void* g, int64_t nb, const tessera::ggml::BlockQ8_1* x,
                  const tessera::ggml::ActivationScales* xs, size_t xb, float* y, size_t ys,
                  tessera::ggml::StreamAhead ahead) {
    nibbles_x8_fixed<NX, tessera::ggml::BlockQ5_1x8, true, true>(g, nb, x, xs, xb, y, ys, ahead);
  }
};
template <int NX>
struct Q8_0x8 {
  static void run(const void* g, int64_t nb, const tessera::ggml::BlockQ8_1* x,
                  const tessera::ggml::ActivationScales* xs, size_t xb, float* y, size_t ys,
                  tessera::ggml::StreamAhead ahead) {
    q8_0x8_fixed<NX>(g, nb, x, xs, xb, y, ys, ahead);
  }
};

constexpr tessera::ggml::RepackTileFn q4_0x8 = &by_nx<Q4_0x8>;
constexpr tessera::ggml::RepackTileFn q4_1x8 = &by_nx<Q4_1x8>;
constexpr tessera::ggml::RepackTileFn q8_0x8 = &by_nx<Q8_0x8>;
constexpr tessera::ggml::RepackTileFn q5_0x8 = &by_nx<Q5_0x8>;
constexpr tessera::ggml::RepackTileFn q5_1x8 = &by_nx<Q5_1x8>;

}  // namespace repack
