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

inline __m256i broadcast4(const int8_t* p) {  // quants p[0..3] in every i32 lane
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

inline __m256 scales8(const uint16_t* h) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)));
}

template <int NX>
void q4_1x8_fixed(const void* group, int64_t nb, const tessera::ggml::BlockQ8_1* x,
                  const tessera::ggml::ActivationScales* xs, size_t x_row_blocks, float* y, size_t y_stride) {
  using tessera::ggml::BlockQ4_1x8;
  const auto* w = static_cast<const BlockQ4_1x8*>(group);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256 acc[NX];
#pragma GCC unroll 8
  for (int xi = 0; xi < NX; ++xi) acc[xi] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ4_1x8& wb = w[b];
    __m256i lo[4], hi[4];  // lo[k]: quants 4k..4k+3 of each row, hi[k]: quants 16+4k..
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qs + 32 * k));
      lo[k] = _mm256_and_si256(v, low4);
      hi[k] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
    }
    const __m256 d = scales8(wb.d);
    const __m256 m = scales8(wb.m);
#pragma GCC unroll 8
    for (int xi = 0; xi < NX; ++xi) {
      const tessera::ggml::BlockQ8_1& xb = x[xi * x_row_blocks + b];
#if TESSERA_GGML_VNNI
      __m256i dot = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        dot = _mm256_dpbusd_epi32(dot, lo[k], broadcast4(xb.qs + 4 * k));
        dot = _mm256_dpbusd_epi32(dot, hi[k], broadcast4(xb.qs + 16 + 4 * k));
      }
#else
      // Eight vpmaddubsw results summed in i16: each is at most 2 * 15 * 127,
      // eight of them 30480 < 32767, so no saturation.
      __m256i pairs = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(lo[k], broadcast4(xb.qs + 4 * k)));
        pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(hi[k], broadcast4(xb.qs + 16 + 4 * k)));
      }
      const __m256i dot = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
#endif
      const tessera::ggml::ActivationScales& xsb = xs[xi * x_row_blocks + b];
      acc[xi] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(xsb.d)), _mm256_cvtepi32_ps(dot), acc[xi]);
      acc[xi] = _mm256_fmadd_ps(m, _mm256_set1_ps(xsb.s), acc[xi]);  // the per-block minimum: m * d_x * sum(q_x)
    }
  }
  for (int xi = 0; xi < NX; ++xi) _mm256_storeu_ps(y + xi * y_stride, acc[xi]);
}

template <int NX>
void q8_0x8_fixed(const void* group, int64_t nb, const tessera::ggml::BlockQ8_1* x,
                  const tessera::ggml::ActivationScales* xs, size_t x_row_blocks, float* y, size_t y_stride) {
  using tessera::ggml::BlockQ8_0x8;
  const auto* w = static_cast<const BlockQ8_0x8*>(group);
  __m256 acc[NX];
#pragma GCC unroll 8
  for (int xi = 0; xi < NX; ++xi) acc[xi] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ8_0x8& wb = w[b];
    __m256i q[8], a[8];  // signed quants and their magnitudes (the unsigned operand)
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      q[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qs + 32 * k));
      a[k] = _mm256_sign_epi8(q[k], q[k]);
    }
    const __m256 d = scales8(wb.d);
#pragma GCC unroll 8
    for (int xi = 0; xi < NX; ++xi) {
      const tessera::ggml::BlockQ8_1& xb = x[xi * x_row_blocks + b];
      __m256i dot = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
        const __m256i sx = _mm256_sign_epi8(broadcast4(xb.qs + 4 * k), q[k]);  // x carries w's sign
#if TESSERA_GGML_VNNI
        dot = _mm256_dpbusd_epi32(dot, a[k], sx);
#else
        dot = _mm256_add_epi32(dot, _mm256_madd_epi16(_mm256_maddubs_epi16(a[k], sx), _mm256_set1_epi16(1)));
#endif
      }
      const __m256 dx = _mm256_set1_ps(xs[xi * x_row_blocks + b].d);
      acc[xi] = _mm256_fmadd_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(dot), acc[xi]);
    }
  }
  for (int xi = 0; xi < NX; ++xi) _mm256_storeu_ps(y + xi * y_stride, acc[xi]);
}

using GroupFn = void (*)(const void*, int64_t, const tessera::ggml::BlockQ8_1*, const tessera::ggml::ActivationScales*,
                         size_t, float*, size_t);

// nx <= tile_x rows in one call of the matching instance, larger nx in chunks.
template <template <int> class K>
void by_nx(const void* group, int64_t nb, const tessera::ggml::BlockQ8_1* x, const tessera::ggml::ActivationScales* xs,
           size_t x_row_blocks, int nx, float* y, size_t y_stride) {
  constexpr int kTile = TESSERA_GGML_REPACK_TILE_X;
  static constexpr GroupFn table[8] = {K<1>::run, K<2>::run, K<3>::run, K<4>::run,
                                       K<kTile >= 5 ? 5 : 1>::run, K<kTile >= 6 ? 6 : 1>::run,
                                       K<kTile >= 7 ? 7 : 1>::run, K<kTile >= 8 ? 8 : 1>::run};
  for (int x0 = 0; x0 < nx; x0 += kTile) {
    const int n = nx - x0 < kTile ? nx - x0 : kTile;
    table[n - 1](group, nb, x + x0 * x_row_blocks, xs + x0 * x_row_blocks, x_row_blocks, y + x0 * y_stride, y_stride);
  }
}

template <int NX>
struct Q4_1x8 {
  static void run(const void* g, int64_t nb, const tessera::ggml::BlockQ8_1* x,
                  const tessera::ggml::ActivationScales* xs, size_t xb, float* y, size_t ys) {
    q4_1x8_fixed<NX>(g, nb, x, xs, xb, y, ys);
  }
};
template <int NX>
struct Q8_0x8 {
  static void run(const void* g, int64_t nb, const tessera::ggml::BlockQ8_1* x,
                  const tessera::ggml::ActivationScales* xs, size_t xb, float* y, size_t ys) {
    q8_0x8_fixed<NX>(g, nb, x, xs, xb, y, ys);
  }
};

constexpr tessera::ggml::RepackTileFn q4_1x8 = &by_nx<Q4_1x8>;
constexpr tessera::ggml::RepackTileFn q8_0x8 = &by_nx<Q8_0x8>;

}  // namespace repack
