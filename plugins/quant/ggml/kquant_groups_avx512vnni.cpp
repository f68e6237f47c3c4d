// kquant_groups_avx512vnni.cpp: the repacked K-quant group kernels for
// AVX-512 VNNI (compiled with the avx512_vnni flags; the amx level uses them
// for decode and for the activation rows outside its panels).
//
// The layouts are the AVX2 kernels' (blocks.hpp: 32-byte chunks holding 4
// quants of each of 8 rows). One zmm holds two consecutive chunks: i32 lane r
// is row r of chunk t, lane 8 + r row r of chunk t + 1. vpdpbusd multiplies
// them by the matching activation quads (vpermd spreads the two dwords of the
// run's activations over the two halves) and sums 4 products per lane into
// i32. A lane then holds at most 16 products of the run (Q4_K: 16 * 15 * 128
// = 30720) or 8 (Q5_K: 31744) or 4 (Q6_K: 32256), which fit 16 bits, so one
// vpdpwssd with the rows' scales (zero-extended in the low half of each lane)
// adds scale * sum to the super-block's i32 sums. At the end of a super-block
// the two halves are added: the integer sums are the AVX2 and scalar kernels'
// exactly, and the f32 close (in ymm, as there) takes KQuantGroupFn's steps,
// so every result is theirs to the bit (KQuantLevel.RepackedGroupsMatchTheirRows).
//
// Against the AVX2 kernels (vpmaddubsw + an i16 add per 32 products, a
// broadcast per activation quad) this is one vpdpbusd and one vpermd per 64
// products.
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "kernels.hpp"
#include "kquant_groups.hpp"

namespace tessera::ggml {
namespace {

constexpr int kGroupTileX = 4;  // activation rows per fixed kernel

inline __m512i load64(const void* p) { return _mm512_loadu_si512(p); }

// vpermd indices: dword a of the source in lanes 0..7, dword b in lanes 8..15.
inline __m512i halves(int a, int b) {
  return _mm512_setr_epi32(a, a, a, a, a, a, a, a, b, b, b, b, b, b, b, b);
}

// A run's 32 activation quants (dwords 0..7) in the low half of a zmm.
inline __m512i run_quants(const int8_t* q) {
  return _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q)));
}

// 8 bytes, one per row, as i32 lanes r and 8 + r (zero-extended).
inline __m512i rows_twice(const uint8_t* bytes8) {
  int64_t v;
  std::memcpy(&v, bytes8, 8);
  const __m256i r = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(v));
  return _mm512_broadcast_i64x4(r);
}

// The two halves of a zmm's i32 lanes added: row r in lane r of a ymm.
inline __m256i fold(__m512i v) {
  return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}

// 8 bytes, one per row, as i16 lanes (2r, 2r + 1) = byte r (zero-extended), ymm.
inline __m256i spread_rows(const uint8_t* bytes8) {
  int64_t v;
  std::memcpy(&v, bytes8, 8);
  const __m256i pick = _mm256_setr_epi8(0, -1, 0, -1, 1, -1, 1, -1, 2, -1, 2, -1, 3, -1, 3, -1,  //
                                        4, -1, 4, -1, 5, -1, 5, -1, 6, -1, 6, -1, 7, -1, 7, -1);
  return _mm256_shuffle_epi8(_mm256_set1_epi64x(v), pick);
}

inline __m256i broadcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Part j (0..7) of the group two super-blocks ahead (kquant_groups_avx2.cpp).
template <typename Group>
inline void prefetch_part(const Group* next, int j) {
  constexpr int kLines = (sizeof(Group) + 63) / 64;
  constexpr int kPerRun = (kLines + 7) / 8;
  const char* p = reinterpret_cast<const char*>(next) + 64 * kPerRun * j;
  for (int l = 0; l < kPerRun; ++l) _mm_prefetch(p + 64 * l, _MM_HINT_T0);
}

// Q4_K: chunks (0, 1) and (2, 3) of run j; low nibbles take activation
// dwords (t, t + 1), high nibbles (4 + t, 5 + t). 16 products per lane.
struct Q4Runs {
  using Group = BlockQ4Kx8;
  template <int NX>
  static void add_run(const Group& w, int j, const BlockQ8K* const* xb, __m512i* isum) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i v01 = load64(w.qs[j][0]), v23 = load64(w.qs[j][2]);
    const __m512i lo01 = _mm512_and_si512(v01, low4), hi01 = _mm512_and_si512(_mm512_srli_epi16(v01, 4), low4);
    const __m512i lo23 = _mm512_and_si512(v23, low4), hi23 = _mm512_and_si512(_mm512_srli_epi16(v23, 4), low4);
    const __m512i scale = rows_twice(w.scales[j]);
    for (int xi = 0; xi < NX; ++xi) {
      const __m512i q = run_quants(xb[xi]->qs + 32 * j);
      __m512i run = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo01, _mm512_permutexvar_epi32(halves(0, 1), q));
      run = _mm512_dpbusd_epi32(run, hi01, _mm512_permutexvar_epi32(halves(4, 5), q));
      run = _mm512_dpbusd_epi32(run, lo23, _mm512_permutexvar_epi32(halves(2, 3), q));
      run = _mm512_dpbusd_epi32(run, hi23, _mm512_permutexvar_epi32(halves(6, 7), q));
      isum[xi] = _mm512_dpwssd_epi32(isum[xi], run, scale);
    }
  }
};

// Q5_K: Q4_K's chunks with the fifth bits ORed in (bit t of qh for the low
// nibbles of chunk t, bit 4 + t for the high: per-half shift counts), and a
// vpdpwssd per chunk pair (8 products per lane: 31744 fits).
struct Q5Runs {
  using Group = BlockQ5Kx8;
  template <int NX>
  static void add_run(const Group& w, int j, const BlockQ8K* const* xb, __m512i* isum) {
    const __m512i low4 = _mm512_set1_epi8(0x0F), bit4 = _mm512_set1_epi8(0x10);
    const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qh[j])));
    const __m512i scale = rows_twice(w.scales[j]);
    for (int t = 0; t < 4; t += 2) {
      const __m512i v = load64(w.qs[j][t]);
      // i16 shift counts: 4 - t (low half), 4 - (t + 1) (high half); t, t + 1 for the high nibbles.
      const __m512i up = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16(static_cast<int16_t>(4 - t)),
                                                 _mm512_set1_epi16(static_cast<int16_t>(3 - t)));
      const __m512i down = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16(static_cast<int16_t>(t)),
                                                   _mm512_set1_epi16(static_cast<int16_t>(t + 1)));
      const __m512i lo = _mm512_or_si512(_mm512_and_si512(v, low4), _mm512_and_si512(_mm512_sllv_epi16(qh, up), bit4));
      const __m512i hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v, 4), low4),
                                         _mm512_and_si512(_mm512_srlv_epi16(qh, down), bit4));
      for (int xi = 0; xi < NX; ++xi) {
        const __m512i q = run_quants(xb[xi]->qs + 32 * j);
        __m512i run = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, _mm512_permutexvar_epi32(halves(t, t + 1), q));
        run = _mm512_dpbusd_epi32(run, hi, _mm512_permutexvar_epi32(halves(4 + t, 5 + t), q));
        isum[xi] = _mm512_dpwssd_epi32(isum[xi], run, scale);
      }
    }
  }
};

// Q4_K and Q5_K (x = d * sc * q - dmin * mn): the runs as above, the
// minimums and the f32 close as the AVX2 kernels.
template <typename Runs, int NX>
void k4_fixed(const typename Runs::Group* g, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, float* y,
              size_t y_stride) {
  __m256 acc[NX];
  for (int xi = 0; xi < NX; ++xi) acc[xi] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const auto& w = g[b];
    const BlockQ8K* xb[NX];
    __m512i isum[NX];
    __m256i msum[NX];
    for (int xi = 0; xi < NX; ++xi) {
      xb[xi] = x + xi * x_row_blocks + b;
      isum[xi] = _mm512_setzero_si512();
      msum[xi] = _mm256_setzero_si256();
    }
    for (int j = 0; j < 8; ++j) {
      prefetch_part(&w + 2, j);
      Runs::template add_run<NX>(w, j, xb, isum);
    }
    for (int j = 0; j < 8; ++j) {
      const __m256i min = spread_rows(w.mins[j]);
      for (int xi = 0; xi < NX; ++xi)
        msum[xi] = _mm256_add_epi32(msum[xi], _mm256_madd_epi16(min, broadcast4(xb[xi]->bsums + 2 * j)));
    }
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.d)));
    const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.dmin)));
    for (int xi = 0; xi < NX; ++xi) {
      const __m256 dx = _mm256_set1_ps(xb[xi]->d);
      acc[xi] = _mm256_fmadd_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(fold(isum[xi])), acc[xi]);
      acc[xi] = _mm256_fnmadd_ps(_mm256_mul_ps(dmin, dx), _mm256_cvtepi32_ps(msum[xi]), acc[xi]);
    }
  }
  for (int xi = 0; xi < NX; ++xi) _mm256_storeu_ps(y + xi * y_stride, acc[xi]);
}

// Q6_K: chunks (2u, 2u + 1) of run j, their two high bits from qh[j][u]
// (bits 2v.. for the low nibbles of chunk 2u + v, 4 + 2v.. for the high);
// the low nibbles are sub-block 2j (activation dwords 2u, 2u + 1), the high
// ones 2j + 1 (dwords 4 + 2u, 5 + 2u). 4 products per lane per vpdpwssd.
template <int NX>
void q6_k_fixed(const BlockQ6Kx8* g, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, float* y, size_t y_stride) {
  const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
  // i16 shift counts: low nibbles' bits up by 4 (v = 0) or 2 (v = 1); high nibbles' down by 0 or 2.
  const __m512i up = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16(4), _mm512_set1_epi16(2));
  const __m512i down = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16(0), _mm512_set1_epi16(2));
  __m256 acc[NX];
  for (int xi = 0; xi < NX; ++xi) acc[xi] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ6Kx8& w = g[b];
    const BlockQ8K* xb[NX];
    __m512i isum[NX];
    __m256i offset[NX];
    for (int xi = 0; xi < NX; ++xi) {
      xb[xi] = x + xi * x_row_blocks + b;
      isum[xi] = _mm512_setzero_si512();
      offset[xi] = _mm256_setzero_si256();
    }
    for (int j = 0; j < 8; ++j) {
      prefetch_part(&w + 2, j);
      // scales[j][r] = (sub-block 2j, 2j + 1) of row r: as i16 pairs per i32 lane, then each alone
      // in the low half of the lane (sign-extended to 16 bits, the high half zero), twice over.
      const __m256i pairs = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales[j])));
      const __m512i scale_lo = _mm512_broadcast_i64x4(_mm256_and_si256(pairs, _mm256_set1_epi32(0xFFFF)));
      const __m512i scale_hi = _mm512_broadcast_i64x4(_mm256_srli_epi32(pairs, 16));
      for (int u = 0; u < 2; ++u) {
        const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qh[j][u])));
        const __m512i ql = load64(w.ql[j][2 * u]);
        const __m512i q_lo = _mm512_or_si512(_mm512_and_si512(ql, low4), _mm512_and_si512(_mm512_sllv_epi16(qh, up), bits45));
        const __m512i q_hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4),
                                             _mm512_and_si512(_mm512_srlv_epi16(qh, down), bits45));
        for (int xi = 0; xi < NX; ++xi) {
          const __m512i q = run_quants(xb[xi]->qs + 32 * j);
          const __m512i run_lo =
              _mm512_dpbusd_epi32(_mm512_setzero_si512(), q_lo, _mm512_permutexvar_epi32(halves(2 * u, 2 * u + 1), q));
          const __m512i run_hi = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q_hi,
                                                     _mm512_permutexvar_epi32(halves(4 + 2 * u, 5 + 2 * u), q));
          isum[xi] = _mm512_dpwssd_epi32(isum[xi], run_lo, scale_lo);
          isum[xi] = _mm512_dpwssd_epi32(isum[xi], run_hi, scale_hi);
        }
      }
    }
    for (int j = 0; j < 8; ++j) {  // the - 32, as the AVX2 kernel
      const __m256i pairs = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales[j])));
      for (int xi = 0; xi < NX; ++xi)
        offset[xi] = _mm256_add_epi32(offset[xi], _mm256_madd_epi16(pairs, broadcast4(xb[xi]->bsums + 2 * j)));
    }
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.d)));
    for (int xi = 0; xi < NX; ++xi) {
      const __m256i total = _mm256_sub_epi32(fold(isum[xi]), _mm256_slli_epi32(offset[xi], 5));
      acc[xi] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(xb[xi]->d)), _mm256_cvtepi32_ps(total), acc[xi]);
    }
  }
  for (int xi = 0; xi < NX; ++xi) _mm256_storeu_ps(y + xi * y_stride, acc[xi]);
}

// Q2_K (BlockQ2Kx8) and Q3_K (BlockQ3Kx8): run j is sub-blocks 2j and
// 2j + 1, two consecutive 32-byte chunks, so one zmm holds both: lane r row r
// of sub-block 2j, lane 8 + r of 2j + 1. Shift t (0..3) of it gives quants
// 4t..4t + 3 of each row's sub-block, against activation dwords t (low half)
// and 4 + t (high half); Q3_K ORs in the third bits (bit t of hmask[j] for the
// low half, 4 + t for the high, both moved to bit 2 + t first, as the AVX2
// kernel does). A lane then holds 16 products (at most 16 * 7 * 128 = 14336),
// and one vpdpwssd per run applies the sub-blocks' scales (lane r: 2j, lane
// 8 + r: 2j + 1). The minimums (Q2_K) and the -4 (Q3_K) and the f32 close are
// the AVX2 kernel's, so the results are its to the bit.
// Shift T of a pair of 2-bit chunks (Q3_K: with its third bits, `third`)
// against the spread activations: quants 4T..4T + 3 of each row's sub-block.
// spread[xi] holds the run's activation dwords as [d0..d3, d0..d3, d4..d7,
// d4..d7] (128-bit lanes), so an in-lane vpshufd gives dword T to lanes 0-7
// and 4 + T to lanes 8-15: one vpermd per run instead of one per shift.
template <int T, bool kThirdBit, int NX>
inline void add_shift(__m512i v, [[maybe_unused]] __m512i third, const __m512i* spread, __m512i* run) {
  __m512i q = _mm512_and_si512(_mm512_srli_epi16(v, 2 * T), _mm512_set1_epi8(3));
  if constexpr (kThirdBit)
    q = _mm512_or_si512(q, _mm512_and_si512(_mm512_srli_epi16(third, T), _mm512_set1_epi8(4)));
  for (int xi = 0; xi < NX; ++xi)
    run[xi] = _mm512_dpbusd_epi32(run[xi], q, _mm512_shuffle_epi32(spread[xi], static_cast<_MM_PERM_ENUM>(T * 0x55)));
}

template <typename Group, int NX>
void low_bit_fixed(const Group* g, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, float* y, size_t y_stride) {
  constexpr bool kThirdBit = std::is_same_v<Group, BlockQ3Kx8>;
  const __m512i spread_quads = _mm512_setr_epi32(0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7);
  // Sub-block 2j's scale alone in the low i16 of lane r, 2j + 1's in lane 8 + r (high i16 zero).
  const auto run_scales = [](const Group& w, int j) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales[j]));
    __m256i pairs;  // i16 lanes (2r, 2r + 1) = row r's scales of 2j, 2j + 1
    if constexpr (kThirdBit) pairs = _mm256_cvtepi8_epi16(bytes);
    else pairs = _mm256_and_si256(_mm256_cvtepu8_epi16(bytes), _mm256_set1_epi16(0x0F));
    const __m256i first = _mm256_and_si256(pairs, _mm256_set1_epi32(0xFFFF));
    return _mm512_inserti64x4(_mm512_castsi256_si512(first), _mm256_srli_epi32(pairs, 16), 1);
  };
  const auto offset_pairs = [](const Group& w, int j) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales[j]));
    if constexpr (kThirdBit) return _mm256_cvtepi8_epi16(bytes);  // times 4 at the close
    else return _mm256_srli_epi16(_mm256_cvtepu8_epi16(bytes), 4);
  };
  __m256 acc[NX];
  for (int xi = 0; xi < NX; ++xi) acc[xi] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const Group& w = g[b];
    const BlockQ8K* xb[NX];
    __m512i isum[NX];
    __m256i osum[NX];
    for (int xi = 0; xi < NX; ++xi) {
      xb[xi] = x + xi * x_row_blocks + b;
      isum[xi] = _mm512_setzero_si512();
      osum[xi] = _mm256_setzero_si256();
    }
    for (int j = 0; j < 8; ++j) {
      prefetch_part(&w + 2, j);
      const __m512i v = load64(w.qs[2 * j]);
      __m512i third = _mm512_setzero_si512();
      if constexpr (kThirdBit) {
        const __m512i hmask = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.hmask[j])));
        third = _mm512_mask_blend_epi64(0xF0, _mm512_slli_epi16(hmask, 2), _mm512_srli_epi16(hmask, 2));
      }
      __m512i run[NX], spread[NX];
      for (int xi = 0; xi < NX; ++xi) {
        run[xi] = _mm512_setzero_si512();
        spread[xi] = _mm512_permutexvar_epi32(spread_quads, run_quants(xb[xi]->qs + 32 * j));
      }
      add_shift<0, kThirdBit, NX>(v, third, spread, run);
      add_shift<1, kThirdBit, NX>(v, third, spread, run);
      add_shift<2, kThirdBit, NX>(v, third, spread, run);
      add_shift<3, kThirdBit, NX>(v, third, spread, run);
      const __m512i scale = run_scales(w, j);
      for (int xi = 0; xi < NX; ++xi) isum[xi] = _mm512_dpwssd_epi32(isum[xi], run[xi], scale);
    }
    for (int j = 0; j < 8; ++j) {
      const __m256i offsets = offset_pairs(w, j);
      for (int xi = 0; xi < NX; ++xi)
        osum[xi] = _mm256_add_epi32(osum[xi], _mm256_madd_epi16(offsets, broadcast4(xb[xi]->bsums + 2 * j)));
    }
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.d)));
    [[maybe_unused]] __m256 dmin;
    if constexpr (!kThirdBit) dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.dmin)));
    for (int xi = 0; xi < NX; ++xi) {
      const __m256 dx = _mm256_set1_ps(xb[xi]->d);
      if constexpr (kThirdBit) {
        const __m256i total = _mm256_sub_epi32(fold(isum[xi]), _mm256_slli_epi32(osum[xi], 2));
        acc[xi] = _mm256_fmadd_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(total), acc[xi]);
      } else {
        acc[xi] = _mm256_fmadd_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(fold(isum[xi])), acc[xi]);
        acc[xi] = _mm256_fnmadd_ps(_mm256_mul_ps(dmin, dx), _mm256_cvtepi32_ps(osum[xi]), acc[xi]);
      }
    }
  }
  for (int xi = 0; xi < NX; ++xi) _mm256_storeu_ps(y + xi * y_stride, acc[xi]);
}

// nx activation rows in tiles of up to kGroupTileX.
template <typename Group, void (*const* Fixed)(const Group*, int64_t, const BlockQ8K*, size_t, float*, size_t)>
void in_tiles(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
              size_t y_stride) {
  const auto* g = static_cast<const Group*>(group);
  for (int x0 = 0; x0 < nx; x0 += kGroupTileX) {
    const int n = nx - x0 < kGroupTileX ? nx - x0 : kGroupTileX;
    Fixed[n - 1](g, nb, x + x0 * x_row_blocks, x_row_blocks, y + x0 * y_stride, y_stride);
  }
}

using Q4Fixed = void (*)(const BlockQ4Kx8*, int64_t, const BlockQ8K*, size_t, float*, size_t);
using Q5Fixed = void (*)(const BlockQ5Kx8*, int64_t, const BlockQ8K*, size_t, float*, size_t);
using Q6Fixed = void (*)(const BlockQ6Kx8*, int64_t, const BlockQ8K*, size_t, float*, size_t);
constexpr Q4Fixed kQ4Fixed[kGroupTileX] = {k4_fixed<Q4Runs, 1>, k4_fixed<Q4Runs, 2>, k4_fixed<Q4Runs, 3>,
                                           k4_fixed<Q4Runs, 4>};
constexpr Q5Fixed kQ5Fixed[kGroupTileX] = {k4_fixed<Q5Runs, 1>, k4_fixed<Q5Runs, 2>, k4_fixed<Q5Runs, 3>,
                                           k4_fixed<Q5Runs, 4>};
constexpr Q6Fixed kQ6Fixed[kGroupTileX] = {q6_k_fixed<1>, q6_k_fixed<2>, q6_k_fixed<3>, q6_k_fixed<4>};
using Q2Fixed = void (*)(const BlockQ2Kx8*, int64_t, const BlockQ8K*, size_t, float*, size_t);
using Q3Fixed = void (*)(const BlockQ3Kx8*, int64_t, const BlockQ8K*, size_t, float*, size_t);
constexpr Q2Fixed kQ2Fixed[kGroupTileX] = {low_bit_fixed<BlockQ2Kx8, 1>, low_bit_fixed<BlockQ2Kx8, 2>,
                                           low_bit_fixed<BlockQ2Kx8, 3>, low_bit_fixed<BlockQ2Kx8, 4>};
constexpr Q3Fixed kQ3Fixed[kGroupTileX] = {low_bit_fixed<BlockQ3Kx8, 1>, low_bit_fixed<BlockQ3Kx8, 2>,
                                           low_bit_fixed<BlockQ3Kx8, 3>, low_bit_fixed<BlockQ3Kx8, 4>};

}  // namespace

void q4_kx8_avx512_vnni(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                        size_t y_stride) {
  in_tiles<BlockQ4Kx8, kQ4Fixed>(group, nb, x, x_row_blocks, nx, y, y_stride);
}

void q5_kx8_avx512_vnni(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                        size_t y_stride) {
  in_tiles<BlockQ5Kx8, kQ5Fixed>(group, nb, x, x_row_blocks, nx, y, y_stride);
}

void q6_kx8_avx512_vnni(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                        size_t y_stride) {
  in_tiles<BlockQ6Kx8, kQ6Fixed>(group, nb, x, x_row_blocks, nx, y, y_stride);
}

void q2_kx8_avx512_vnni(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                        size_t y_stride) {
  in_tiles<BlockQ2Kx8, kQ2Fixed>(group, nb, x, x_row_blocks, nx, y, y_stride);
}

void q3_kx8_avx512_vnni(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                        size_t y_stride) {
  in_tiles<BlockQ3Kx8, kQ3Fixed>(group, nb, x, x_row_blocks, nx, y, y_stride);
}

}  // namespace tessera::ggml
