// kquant_groups_avx2.cpp: the repacked K-quant group kernels for AVX2
// (compiled with -mavx2 -mfma -mf16c; the AVX-512 levels use them too).
//
// Row r of the 8 lives in i32 lane r, or i16 lanes 2r and 2r + 1 while a run
// of 32 quants is summed: one 32-byte chunk holds 4 quants of each row, one
// vpmaddubsw multiplies it by a broadcast group of 4 activation quants, and
// the i16 pair sums add up in 16 bits until one vpmaddwd applies the rows'
// scales (per 32 quants for Q4_K, per 16 for Q6_K). Against the kernels that
// read the ggml rows (kernels_avx2.cpp: one vpmaddwd per 32 products, a
// horizontal sum per row) this halves the multiply-class instructions, and
// the activation tiles of a prefill reuse every unpacked chunk.
//
// 16-bit headroom: a vpmaddubsw lane is at most 2 * 15 * 128 (Q4_K),
// 2 * 63 * 128 = 16128 (Q6_K) or 2 * 7 * 128 (Q3_K), so eight Q4_K lanes
// (30720), two Q6_K lanes (32256) or the four of a Q2_K/Q3_K sub-block (7168)
// add without overflow.
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "kquant_groups.hpp"
#include "kernels.hpp"

namespace tessera::ggml {
namespace {

// Activation rows per call of a fixed kernel: with 8 weight rows, each row
// needs an i16 run sum and an i32 super-block sum in registers.
constexpr int kGroupTileX = 4;

inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// 4 consecutive activation quants (or two i16 sums) broadcast to every i32 lane.
inline __m256i broadcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// 8 bytes, one per row, as i16 lanes (2r, 2r + 1) = byte r (zero-extended).
inline __m256i spread_rows(const uint8_t* bytes8) {
  int64_t v;
  std::memcpy(&v, bytes8, 8);
  const __m256i pick = _mm256_setr_epi8(0, -1, 0, -1, 1, -1, 1, -1, 2, -1, 2, -1, 3, -1, 3, -1,  //
                                        4, -1, 4, -1, 5, -1, 5, -1, 6, -1, 6, -1, 7, -1, 7, -1);
  return _mm256_shuffle_epi8(_mm256_set1_epi64x(v), pick);
}

// Row r's scale pair (sub-blocks 2j, 2j + 1) sits in i16 lanes 2r, 2r + 1 of
// `pairs` (BlockQ6Kx8, BlockQ2Kx8, BlockQ3Kx8): the first (half 0) or the
// second (half 1) of each pair over both lanes, the vpmaddwd operand for that
// sub-block's sums.
inline __m256i pair_member(__m256i pairs, int half) {
  const __m256i first = _mm256_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13,  //
                                         0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13);
  const __m256i second = _mm256_setr_epi8(2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15,  //
                                          2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15);
  return _mm256_shuffle_epi8(pairs, half == 0 ? first : second);
}

// Part j (0..7) of a super-block group ahead: 1/8 of it per run, so the
// whole group is on its way while this one is computed. Streamed from
// memory, the hardware prefetchers alone left the Q6_K kernel at 3.6 GB/s on
// one core (Zen 3); this, two groups ahead, gives 12-13 GB/s (one ahead: 11).
// bench_quant_kernels MatVec, streamed, 4096 x 4096.
template <typename Group>
inline void prefetch_part(const Group* next, int j) {
  constexpr int kLines = (sizeof(Group) + 63) / 64;
  constexpr int kPerRun = (kLines + 7) / 8;
  const char* p = reinterpret_cast<const char*>(next) + 64 * kPerRun * j;
  for (int l = 0; l < kPerRun; ++l) _mm_prefetch(p + 64 * l, _MM_HINT_T0);
}

// Q4_K: the 8 chunks of run j summed in i16 (eight vpmaddubsw lanes of at
// most 2 * 15 * 128 fit), then one vpmaddwd with the rows' scales.
struct Q4Runs {
  using Group = BlockQ4Kx8;
  template <int NX>
  static void add_run(const Group& w, int j, const BlockQ8K* const* xb, __m256i* isum) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256i run[NX];  // i16: row r's products of run j in lanes 2r, 2r + 1
    for (int xi = 0; xi < NX; ++xi) run[xi] = _mm256_setzero_si256();
    // Not unrolled: unrolled, GCC computed every product of the run first
    // and spilled them (30% of the instructions were stack moves).
#pragma GCC unroll 1
    for (int t = 0; t < 4; ++t) {
      const __m256i v = load32(w.qs[j][t]);
      const __m256i lo = _mm256_and_si256(v, low4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
      for (int xi = 0; xi < NX; ++xi) {
        const int8_t* q = xb[xi]->qs + 32 * j + 4 * t;
        run[xi] = _mm256_add_epi16(run[xi], _mm256_maddubs_epi16(lo, broadcast4(q)));
        run[xi] = _mm256_add_epi16(run[xi], _mm256_maddubs_epi16(hi, broadcast4(q + 16)));
      }
    }
    const __m256i scale = spread_rows(w.scales[j]);
    for (int xi = 0; xi < NX; ++xi) isum[xi] = _mm256_add_epi32(isum[xi], _mm256_madd_epi16(run[xi], scale));
  }
};

// Q5_K: Q4_K's chunks with the fifth bits ORed in, and i16 sums over two
// chunks at a time (a vpmaddubsw lane reaches 2 * 31 * 128: four fit).
struct Q5Runs {
  using Group = BlockQ5Kx8;
  template <int NX>
  static void add_run(const Group& w, int j, const BlockQ8K* const* xb, __m256i* isum) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), bit4 = _mm256_set1_epi8(0x10);
    const __m256i qh = load32(w.qh[j]);
    const __m256i scale = spread_rows(w.scales[j]);
#pragma GCC unroll 1
    for (int t0 = 0; t0 < 4; t0 += 2) {
      __m256i run[NX];
      for (int t = t0; t < t0 + 2; ++t) {
        const __m256i v = load32(w.qs[j][t]);
        // Bit t of qh to bit 4 for the low nibbles, bit 4 + t for the high ones.
        const __m256i lo = _mm256_or_si256(_mm256_and_si256(v, low4),
                                           _mm256_and_si256(_mm256_sll_epi16(qh, _mm_cvtsi32_si128(4 - t)), bit4));
        const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), low4),
                                           _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(t)), bit4));
        for (int xi = 0; xi < NX; ++xi) {
          const int8_t* q = xb[xi]->qs + 32 * j + 4 * t;
          const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(lo, broadcast4(q)),
                                             _mm256_maddubs_epi16(hi, broadcast4(q + 16)));
          run[xi] = t == t0 ? p : _mm256_add_epi16(run[xi], p);
        }
      }
      for (int xi = 0; xi < NX; ++xi) isum[xi] = _mm256_add_epi32(isum[xi], _mm256_madd_epi16(run[xi], scale));
    }
  }
};

// Q4_K and Q5_K (x = d * sc * q - dmin * mn): Runs::add_run sums each run
// of 32 with its scales; the minimums and the f32 close are shared.
template <typename Runs, int NX>
void k4_fixed(const typename Runs::Group* g, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, float* y,
              size_t y_stride) {
  __m256 acc[NX];
  for (int xi = 0; xi < NX; ++xi) acc[xi] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const auto& w = g[b];
    const BlockQ8K* xb[NX];
    __m256i isum[NX], msum[NX];
    for (int xi = 0; xi < NX; ++xi) {
      xb[xi] = x + xi * x_row_blocks + b;
      isum[xi] = msum[xi] = _mm256_setzero_si256();
    }
    for (int j = 0; j < 8; ++j) {
      prefetch_part(&w + 2, j);
      Runs::template add_run<NX>(w, j, xb, isum);
    }
    // The minimums in a loop of their own: inside the one above, their sums
    // took the registers the run sums need (spills: 10% slower).
#pragma GCC unroll 1
    for (int j = 0; j < 8; ++j) {
      const __m256i min = spread_rows(w.mins[j]);
      // bsums 2j and 2j + 1 (the run's two groups of 16) in the pair lanes.
      for (int xi = 0; xi < NX; ++xi)
        msum[xi] = _mm256_add_epi32(msum[xi], _mm256_madd_epi16(min, broadcast4(xb[xi]->bsums + 2 * j)));
    }
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.d)));
    const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.dmin)));
    for (int xi = 0; xi < NX; ++xi) {
      const __m256 dx = _mm256_set1_ps(xb[xi]->d);
      acc[xi] = _mm256_fmadd_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(isum[xi]), acc[xi]);
      acc[xi] = _mm256_fnmadd_ps(_mm256_mul_ps(dmin, dx), _mm256_cvtepi32_ps(msum[xi]), acc[xi]);
    }
  }
  for (int xi = 0; xi < NX; ++xi) _mm256_storeu_ps(y + xi * y_stride, acc[xi]);
}

template <int NX>
void q6_k_fixed(const BlockQ6Kx8* g, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, float* y, size_t y_stride) {
  const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30);
  __m256 acc[NX];
  for (int xi = 0; xi < NX; ++xi) acc[xi] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ6Kx8& w = g[b];
    const BlockQ8K* xb[NX];
    __m256i isum[NX], offset[NX];
    for (int xi = 0; xi < NX; ++xi) {
      xb[xi] = x + xi * x_row_blocks + b;
      isum[xi] = offset[xi] = _mm256_setzero_si256();
    }
    for (int j = 0; j < 8; ++j) {
      const __m256i pairs = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales[j])));
      prefetch_part(&w + 2, j);
      // Chunks 2u and 2u + 1 (two vpmaddubsw lanes per i16 sum), the low
      // nibbles' sub-block 2j, then the high nibbles' 2j + 1: both at once
      // needed more than 16 registers.
#pragma GCC unroll 1
      for (int u = 0; u < 2; ++u) {
        const __m256i qh = load32(w.qh[j][u]);
        for (int half = 0; half < 2; ++half) {
          __m256i run[NX];
          for (int v = 0; v < 2; ++v) {
            const int t = 2 * u + v;
            const __m256i ql = load32(w.ql[j][t]);
            // The two high bits to bits 4..5: bits 2v (low nibble) or 4 + 2v (high nibble) of qh.
            const __m256i high = half == 0 ? (v == 0 ? _mm256_slli_epi16(qh, 4) : _mm256_slli_epi16(qh, 2))
                                           : (v == 0 ? qh : _mm256_srli_epi16(qh, 2));
            const __m256i low = half == 0 ? ql : _mm256_srli_epi16(ql, 4);
            const __m256i q6 = _mm256_or_si256(_mm256_and_si256(low, low4), _mm256_and_si256(high, bits45));
            for (int xi = 0; xi < NX; ++xi) {
              const __m256i p = _mm256_maddubs_epi16(q6, broadcast4(xb[xi]->qs + 32 * j + 16 * half + 4 * t));
              run[xi] = v == 0 ? p : _mm256_add_epi16(run[xi], p);
            }
          }
          const __m256i scale = pair_member(pairs, half);
          for (int xi = 0; xi < NX; ++xi) isum[xi] = _mm256_add_epi32(isum[xi], _mm256_madd_epi16(run[xi], scale));
        }
      }
    }
    #pragma GCC unroll 1
    for (int j = 0; j < 8; ++j) {  // the - 32, in a loop of its own as Q4_K's minimums
      const __m256i pairs = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales[j])));
      for (int xi = 0; xi < NX; ++xi)
        offset[xi] = _mm256_add_epi32(offset[xi], _mm256_madd_epi16(pairs, broadcast4(xb[xi]->bsums + 2 * j)));
    }
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.d)));
    for (int xi = 0; xi < NX; ++xi) {
      const __m256i total = _mm256_sub_epi32(isum[xi], _mm256_slli_epi32(offset[xi], 5));
      acc[xi] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(xb[xi]->d)), _mm256_cvtepi32_ps(total), acc[xi]);
    }
  }
  for (int xi = 0; xi < NX; ++xi) _mm256_storeu_ps(y + xi * y_stride, acc[xi]);
}

// Q2_K (BlockQ2Kx8) and Q3_K (BlockQ3Kx8): sub-block s of 16 is one chunk
// of 2-bit quants; four shifts give its four groups of 4 quants per row, each
// against a broadcast group of 4 activation quants (Q3_K ORs in its third
// bit), and the i16 sums of the sub-block (at most 4 * 2 * 7 * 128 = 7168)
// take the rows' scales with one vpmaddwd. The scale pairs of sub-blocks 2j,
// 2j + 1 come as Q6_K's do, one load per pair; Q2_K's minimums and Q3_K's
// -4 (offset 4 * sc) are the vpmaddwd against the sums per 16, in a loop of
// their own.
template <typename Group, int NX>
void low_bit_fixed(const Group* g, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, float* y, size_t y_stride) {
  constexpr bool kThirdBit = std::is_same_v<Group, BlockQ3Kx8>;
  const __m256i low2 = _mm256_set1_epi8(3), bit2 = _mm256_set1_epi8(4);
  // The i16 (scale, scale) pairs of sub-blocks 2j, 2j + 1 per row, and their offsets.
  const auto scale_pairs = [](const Group& w, int j) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales[j]));
    if constexpr (kThirdBit) return _mm256_cvtepi8_epi16(bytes);
    else return _mm256_and_si256(_mm256_cvtepu8_epi16(bytes), _mm256_set1_epi16(0x0F));
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
    __m256i isum[NX], osum[NX];
    for (int xi = 0; xi < NX; ++xi) {
      xb[xi] = x + xi * x_row_blocks + b;
      isum[xi] = osum[xi] = _mm256_setzero_si256();
    }
    for (int j = 0; j < 8; ++j) {
      prefetch_part(&w + 2, j);
      const __m256i pairs = scale_pairs(w, j);
#pragma GCC unroll 1
      for (int half = 0; half < 2; ++half) {
        const int sub = 2 * j + half;
        const __m256i v = load32(w.qs[sub]);
        // Q3_K: this half's third bits (t, or 4 + t) moved to bits 2 + t, so
        // chunk t's is bit 2 after a shift by t; within each byte at every step.
        [[maybe_unused]] __m256i third;
        if constexpr (kThirdBit) {
          const __m256i hmask = load32(w.hmask[j]);
          third = half == 0 ? _mm256_slli_epi16(hmask, 2) : _mm256_srli_epi16(hmask, 2);
        }
        __m256i run[NX];
        for (int t = 0; t < 4; ++t) {
          __m256i q = _mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(2 * t)), low2);
          if constexpr (kThirdBit)
            q = _mm256_or_si256(q, _mm256_and_si256(_mm256_srl_epi16(third, _mm_cvtsi32_si128(t)), bit2));
          for (int xi = 0; xi < NX; ++xi) {
            const __m256i p = _mm256_maddubs_epi16(q, broadcast4(xb[xi]->qs + 16 * sub + 4 * t));
            run[xi] = t == 0 ? p : _mm256_add_epi16(run[xi], p);
          }
        }
        const __m256i scale = pair_member(pairs, half);
        for (int xi = 0; xi < NX; ++xi) isum[xi] = _mm256_add_epi32(isum[xi], _mm256_madd_epi16(run[xi], scale));
      }
    }
#pragma GCC unroll 1
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
        const __m256i total = _mm256_sub_epi32(isum[xi], _mm256_slli_epi32(osum[xi], 2));
        acc[xi] = _mm256_fmadd_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(total), acc[xi]);
      } else {
        acc[xi] = _mm256_fmadd_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(isum[xi]), acc[xi]);
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

void q4_kx8_avx2(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                 size_t y_stride) {
  in_tiles<BlockQ4Kx8, kQ4Fixed>(group, nb, x, x_row_blocks, nx, y, y_stride);
}

void q5_kx8_avx2(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                 size_t y_stride) {
  in_tiles<BlockQ5Kx8, kQ5Fixed>(group, nb, x, x_row_blocks, nx, y, y_stride);
}

void q6_kx8_avx2(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                 size_t y_stride) {
  in_tiles<BlockQ6Kx8, kQ6Fixed>(group, nb, x, x_row_blocks, nx, y, y_stride);
}

void q2_kx8_avx2(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                 size_t y_stride) {
  in_tiles<BlockQ2Kx8, kQ2Fixed>(group, nb, x, x_row_blocks, nx, y, y_stride);
}

void q3_kx8_avx2(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                 size_t y_stride) {
  in_tiles<BlockQ3Kx8, kQ3Fixed>(group, nb, x, x_row_blocks, nx, y, y_stride);
}

}  // namespace tessera::ggml
