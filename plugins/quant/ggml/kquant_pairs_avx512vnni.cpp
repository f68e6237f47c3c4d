// kquant_pairs_avx512vnni.cpp: the repacked K-quant groups two at a time
// (KQuantPairFn, kernels.hpp) for AVX-512 VNNI; the avx512_vnni and amx
// levels' tables.
//
// Why pairs: in one group of 8 rows a 32-byte chunk holds 4 quants of each
// row, all against the same activation quad, so a zmm of two chunks needs two
// different quads and a vpermd per vpdpbusd to place them (the group kernels,
// kquant_groups_avx512vnni.cpp). The same chunk of the next group (rows 8-15)
// is against the same quad; loaded into the upper half, a zmm holds one quad's
// weights for 16 rows, lane r row r, and the activation quad is one broadcast
// memory operand of vpdpbusd. For Q4_K, per 512 products and activation row
// that is 8 vpdpbusd and 2 vpdpwssd, against 8 + 8 vpermd + 2 in the group
// kernel (Q2_K to Q6_K alike, each with its own scale arithmetic below). The
// layouts are the groups' (BlockQ2Kx8 .. BlockQ6Kx8 at group_bytes apart), so
// nothing is repacked twice and the AMX panels read the same bytes.
//
// Exactness: per row the integer sums of a super-block are the group
// kernels' (integers, exact), and the f32 close takes KQuantGroupFn's steps
// lane for lane, so every result is the scalar groups' to the bit
// (KQuantLevel.PairsMatchTheScalarGroups).
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "kernels.hpp"
#include "kquant_groups.hpp"

namespace tessera::ggml {
namespace {

// Activation rows per fixed kernel: their 8 integer sums and 8 f32
// accumulators and a run's 8 unpacked weight vectors fit the 32 zmm registers.
constexpr int kPairTileX = 8;
// Activation rows whose product chains are interleaved (k4_pair_fixed): 4
// rows' low and high chains are 8 independent vpdpbusd chains.
constexpr int kChainRows = 4;

// The same 32 bytes of two groups: rows 0-7 in the low half, 8-15 in the high.
inline __m512i both_groups(const uint8_t* first, const uint8_t* second) {
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(first));
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(second)), 1);
}

// 8 bytes per group, one per row: i32 lane r = row r's byte (zero-extended).
inline __m512i row_bytes(const uint8_t* first8, const uint8_t* second8) {
  const __m128i both = _mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(first8)),
                                          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(second8)));
  return _mm512_cvtepu8_epi32(both);
}

// 8 f16 per group, one per row, as f32 lane r.
inline __m512 row_halves(const uint16_t* first8, const uint16_t* second8) {
  const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(first8));
  const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(lo),
                                               _mm_loadu_si128(reinterpret_cast<const __m128i*>(second8)), 1);
  return _mm512_cvtph_ps(both);
}

// Four activation bytes (a quad), the same in every lane.
inline __m512i quad(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// The super-blocks two ahead of super-block b in both groups (second =
// first + nb), whose lines the runs of b prefetch. Near the end of the rows
// that is the start of the next pair (first + 2nb, first + 3nb): b + 2 of this
// pair's groups would be the second group's start, already being read, and
// the next pair's first super-blocks would stall. Past the last pair the
// addresses are never read; prefetches do not fault.
template <typename Group>
struct Ahead {
  const Group* first;
  const Group* second;
};
template <typename Group>
inline Ahead<Group> ahead_of(const Group* first, const Group* second, int64_t nb, int64_t b) {
  if (b + 2 < nb) return {first + b + 2, second + b + 2};
  return {second + b + 2, second + nb + b + 2};
}

// Part j (0..7) of both, one part per run, as the group kernels prefetch.
template <typename Group>
inline void prefetch_part(const Ahead<Group>& ahead, int j) {
  constexpr int kLines = (sizeof(Group) + 63) / 64;
  constexpr int kPerRun = (kLines + 7) / 8;
  const char* a = reinterpret_cast<const char*>(ahead.first) + 64 * kPerRun * j;
  const char* c = reinterpret_cast<const char*>(ahead.second) + 64 * kPerRun * j;
  for (int l = 0; l < kPerRun; ++l) {
    _mm_prefetch(a + 64 * l, _MM_HINT_T0);
    _mm_prefetch(c + 64 * l, _MM_HINT_T0);
  }
}

// Q4_K and Q5_K (x = d * sc * q - dmin * mn per run of 32). Chunk t of run
// j holds quants 4t..4t + 3 of each row in its low nibbles and 16 + 4t.. in
// its high ones: against activation bytes 32j + 4t and 32j + 16 + 4t. Q5_K
// ORs in the fifth bits: bit t of its qh[j] byte for the low quant, 4 + t for
// the high. The products are summed in chains short enough for i16 (Q4_K:
// four chunks, 16 * 15 * 128 = 30720; Q5_K: two, 8 * 31 * 128 = 31744), and
// each chain takes the run's scale with one vpdpwssd (zero-extended scale in
// the low i16 of each lane).
template <typename Group, int NX>
void k4_pair_fixed(const Group* first, const Group* second, int64_t nb, const BlockQ8K* x, size_t x_row_blocks,
                   float* y, size_t y_stride) {
  constexpr bool kFifthBit = std::is_same_v<Group, BlockQ5Kx8>;
  constexpr int kChain = kFifthBit ? 2 : 4;
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  __m512 acc[NX];
  for (int xi = 0; xi < NX; ++xi) acc[xi] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const Group& wa = first[b];
    const Group& wb = second[b];
    const auto ahead = ahead_of(first, second, nb, b);
    const BlockQ8K* xb[NX];
    __m512i isum[NX];
    for (int xi = 0; xi < NX; ++xi) {
      xb[xi] = x + xi * x_row_blocks + b;
      isum[xi] = _mm512_setzero_si512();
    }
    for (int j = 0; j < 8; ++j) {
      prefetch_part(ahead, j);
      __m512i lo[4], hi[4];
      for (int t = 0; t < 4; ++t) {
        const __m512i v = both_groups(wa.qs[j][t], wb.qs[j][t]);
        lo[t] = _mm512_and_si512(v, low4);
        hi[t] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
      }
      if constexpr (kFifthBit) {
        const __m512i qh = both_groups(wa.qh[j], wb.qh[j]);
        const __m512i bit4 = _mm512_set1_epi8(0x10);
        // Bit t (and 4 + t) of each byte to bit 4; i16 shifts, as no bit that
        // crosses into the neighbouring byte lands on bit 4.
        lo[0] = _mm512_or_si512(lo[0], _mm512_and_si512(_mm512_slli_epi16(qh, 4), bit4));
        lo[1] = _mm512_or_si512(lo[1], _mm512_and_si512(_mm512_slli_epi16(qh, 3), bit4));
        lo[2] = _mm512_or_si512(lo[2], _mm512_and_si512(_mm512_slli_epi16(qh, 2), bit4));
        lo[3] = _mm512_or_si512(lo[3], _mm512_and_si512(_mm512_slli_epi16(qh, 1), bit4));
        hi[0] = _mm512_or_si512(hi[0], _mm512_and_si512(qh, bit4));
        hi[1] = _mm512_or_si512(hi[1], _mm512_and_si512(_mm512_srli_epi16(qh, 1), bit4));
        hi[2] = _mm512_or_si512(hi[2], _mm512_and_si512(_mm512_srli_epi16(qh, 2), bit4));
        hi[3] = _mm512_or_si512(hi[3], _mm512_and_si512(_mm512_srli_epi16(qh, 3), bit4));
      }
      const __m512i scale = row_bytes(wa.scales[j], wb.scales[j]);
      // The chains of kChainRows activation rows side by side, product by
      // product: consecutive vpdpbusd are independent, so the core need not
      // find them among chains written one after another.
      for (int x0 = 0; x0 < NX; x0 += kChainRows) {
        constexpr int kRows = NX < kChainRows ? NX : kChainRows;
        for (int c = 0; c < 4; c += kChain) {
          __m512i low_chain[kRows], high_chain[kRows];
          for (int i = 0; i < kRows; ++i) {
            if (x0 + i >= NX) break;
            const int8_t* q = xb[x0 + i]->qs + 32 * j;
            low_chain[i] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo[c], quad(q + 4 * c));
            high_chain[i] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), hi[c], quad(q + 16 + 4 * c));
          }
          for (int t = c + 1; t < c + kChain; ++t) {
            for (int i = 0; i < kRows; ++i) {
              if (x0 + i >= NX) break;
              const int8_t* q = xb[x0 + i]->qs + 32 * j;
              low_chain[i] = _mm512_dpbusd_epi32(low_chain[i], lo[t], quad(q + 4 * t));
              high_chain[i] = _mm512_dpbusd_epi32(high_chain[i], hi[t], quad(q + 16 + 4 * t));
            }
          }
          for (int i = 0; i < kRows; ++i) {
            if (x0 + i >= NX) break;
            isum[x0 + i] = _mm512_dpwssd_epi32(isum[x0 + i], low_chain[i], scale);
            isum[x0 + i] = _mm512_dpwssd_epi32(isum[x0 + i], high_chain[i], scale);
          }
        }
      }
    }
    // The minimums: lane r = mn * (bsums[2j] + bsums[2j + 1]) summed over j, the
    // minimum in both i16 halves of the lane against the two sums of 16.
    __m512i msum[NX];
    for (int xi = 0; xi < NX; ++xi) msum[xi] = _mm512_setzero_si512();
    for (int j = 0; j < 8; ++j) {
      const __m512i mn = row_bytes(wa.mins[j], wb.mins[j]);
      const __m512i mn_twice = _mm512_or_si512(mn, _mm512_slli_epi32(mn, 16));
      for (int xi = 0; xi < NX; ++xi) msum[xi] = _mm512_dpwssd_epi32(msum[xi], mn_twice, quad(xb[xi]->bsums + 2 * j));
    }
    const __m512 d = row_halves(wa.d, wb.d);
    const __m512 dmin = row_halves(wa.dmin, wb.dmin);
    for (int xi = 0; xi < NX; ++xi) {
      const __m512 dx = _mm512_set1_ps(xb[xi]->d);
      acc[xi] = _mm512_fmadd_ps(_mm512_mul_ps(d, dx), _mm512_cvtepi32_ps(isum[xi]), acc[xi]);
      acc[xi] = _mm512_fnmadd_ps(_mm512_mul_ps(dmin, dx), _mm512_cvtepi32_ps(msum[xi]), acc[xi]);
    }
  }
  for (int xi = 0; xi < NX; ++xi) _mm512_storeu_ps(y + xi * y_stride, acc[xi]);
}

// Q6_K (x = d * sc * (q - 32) per sub-block of 16). Chunk t = 2u + v of run j:
// low nibbles of ql[j][t] and bits 2v, 2v + 1 of qh[j][u] are quants 4t.. of
// sub-block 2j (activation bytes 32j + 4t), high nibbles and bits 4 + 2v, 5 + 2v
// those of sub-block 2j + 1 (32j + 16 + 4t). A sub-block's 16 products per
// lane (up to 16 * 63 * 128) need i32, so each takes its signed scale with
// one vpmulld; the - 32 is the offset sum, as in the group kernels.
template <int NX>
void q6_k_pair_fixed(const BlockQ6Kx8* first, const BlockQ6Kx8* second, int64_t nb, const BlockQ8K* x,
                     size_t x_row_blocks, float* y, size_t y_stride) {
  const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
  __m512 acc[NX];
  for (int xi = 0; xi < NX; ++xi) acc[xi] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ6Kx8& wa = first[b];
    const BlockQ6Kx8& wb = second[b];
    const auto ahead = ahead_of(first, second, nb, b);
    const BlockQ8K* xb[NX];
    __m512i isum[NX], offset[NX];
    for (int xi = 0; xi < NX; ++xi) {
      xb[xi] = x + xi * x_row_blocks + b;
      isum[xi] = _mm512_setzero_si512();
      offset[xi] = _mm512_setzero_si512();
    }
    for (int j = 0; j < 8; ++j) {
      prefetch_part(ahead, j);
      __m512i qa[4], qb[4];
      for (int u = 0; u < 2; ++u) {
        const __m512i qh = both_groups(wa.qh[j][u], wb.qh[j][u]);
        for (int v = 0; v < 2; ++v) {
          const int t = 2 * u + v;
          const __m512i ql = both_groups(wa.ql[j][t], wb.ql[j][t]);
          // Bits 2v, 2v + 1 (4 + 2v, 5 + 2v) of each byte to bits 4, 5 (i16 shifts: what
          // crosses into the neighbouring byte never lands on bits 4, 5).
          const __m512i high_a = v == 0 ? _mm512_slli_epi16(qh, 4) : _mm512_slli_epi16(qh, 2);
          const __m512i high_b = v == 0 ? qh : _mm512_srli_epi16(qh, 2);
          qa[t] = _mm512_or_si512(_mm512_and_si512(ql, low4), _mm512_and_si512(high_a, bits45));
          qb[t] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4), _mm512_and_si512(high_b, bits45));
        }
      }
      // Lane r: row r's scales of sub-blocks 2j, 2j + 1 as the i16 pair (a, b), and each sign-extended to i32.
      const __m512i pairs = _mm512_cvtepi8_epi16(
          _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wa.scales[j]))),
                                  _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales[j])), 1));
      const __m512i scale_a = _mm512_srai_epi32(_mm512_slli_epi32(pairs, 16), 16);
      const __m512i scale_b = _mm512_srai_epi32(pairs, 16);
      for (int xi = 0; xi < NX; ++xi) {
        const int8_t* q = xb[xi]->qs + 32 * j;
        __m512i sum_a = _mm512_dpbusd_epi32(_mm512_setzero_si512(), qa[0], quad(q));
        __m512i sum_b = _mm512_dpbusd_epi32(_mm512_setzero_si512(), qb[0], quad(q + 16));
        for (int t = 1; t < 4; ++t) {
          sum_a = _mm512_dpbusd_epi32(sum_a, qa[t], quad(q + 4 * t));
          sum_b = _mm512_dpbusd_epi32(sum_b, qb[t], quad(q + 16 + 4 * t));
        }
        isum[xi] = _mm512_add_epi32(isum[xi], _mm512_mullo_epi32(sum_a, scale_a));
        isum[xi] = _mm512_add_epi32(isum[xi], _mm512_mullo_epi32(sum_b, scale_b));
        offset[xi] = _mm512_dpwssd_epi32(offset[xi], pairs, quad(xb[xi]->bsums + 2 * j));
      }
    }
    const __m512 d = row_halves(wa.d, wb.d);
    for (int xi = 0; xi < NX; ++xi) {
      const __m512i total = _mm512_sub_epi32(isum[xi], _mm512_slli_epi32(offset[xi], 5));
      acc[xi] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(xb[xi]->d)), _mm512_cvtepi32_ps(total), acc[xi]);
    }
  }
  for (int xi = 0; xi < NX; ++xi) _mm512_storeu_ps(y + xi * y_stride, acc[xi]);
}

// Q2_K and Q3_K: sub-block s of 16 is one 32-byte chunk per group, shift t
// of it quants 16s + 4t.. of each row (against activation bytes 16s + 4t);
// Q3_K ORs in the third bit (bit t of its hmask[j] byte for s = 2j, 4 + t for
// 2j + 1, moved to bit 2). A sub-block's 16 products per lane (at most
// 16 * 7 * 128 = 14336) take its scale with one vpdpwssd; the minimums (Q2_K)
// or the - 4 (Q3_K) come from the activations' sums per 16, and the f32
// close is the group kernels'.
template <typename Group, int NX>
void low_bit_pair_fixed(const Group* first, const Group* second, int64_t nb, const BlockQ8K* x,
                        size_t x_row_blocks, float* y, size_t y_stride) {
  constexpr bool kThirdBit = std::is_same_v<Group, BlockQ3Kx8>;
  const __m512i two_bits = _mm512_set1_epi8(3), bit2 = _mm512_set1_epi8(4);
  __m512 acc[NX];
  for (int xi = 0; xi < NX; ++xi) acc[xi] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const Group& wa = first[b];
    const Group& wb = second[b];
    const auto ahead = ahead_of(first, second, nb, b);
    const BlockQ8K* xb[NX];
    __m512i isum[NX], osum[NX];
    for (int xi = 0; xi < NX; ++xi) {
      xb[xi] = x + xi * x_row_blocks + b;
      isum[xi] = _mm512_setzero_si512();
      osum[xi] = _mm512_setzero_si512();
    }
    for (int j = 0; j < 8; ++j) {
      prefetch_part(ahead, j);
      // Lane r: row r's scale bytes of sub-blocks 2j, 2j + 1 as an i16 pair (Q2_K: the
      // scale nibbles, its minimums the high ones; Q3_K: signed scales, also its offsets).
      const __m256i bytes = _mm256_inserti128_si256(
          _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wa.scales[j]))),
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales[j])), 1);
      __m512i pairs, offsets;
      if constexpr (kThirdBit) {
        pairs = _mm512_cvtepi8_epi16(bytes);
        offsets = pairs;
      } else {
        const __m512i wide = _mm512_cvtepu8_epi16(bytes);
        pairs = _mm512_and_si512(wide, _mm512_set1_epi16(0x0F));
        offsets = _mm512_srli_epi16(wide, 4);
      }
      [[maybe_unused]] __m512i third;
      if constexpr (kThirdBit) third = both_groups(wa.hmask[j], wb.hmask[j]);
      for (int h = 0; h < 2; ++h) {
        const int s = 2 * j + h;
        const __m512i v = both_groups(wa.qs[s], wb.qs[s]);
        __m512i q[4];
        for (int t = 0; t < 4; ++t) {
          q[t] = _mm512_and_si512(_mm512_srli_epi16(v, 2 * t), two_bits);
          if constexpr (kThirdBit) {
            // Bit 4h + t of each byte to bit 2 (i16 shifts: nothing from the neighbouring byte lands there).
            const int from = 4 * h + t;
            const __m512i moved = from >= 2 ? _mm512_srli_epi16(third, from - 2) : _mm512_slli_epi16(third, 2 - from);
            q[t] = _mm512_or_si512(q[t], _mm512_and_si512(moved, bit2));
          }
        }
        // The sub-block's scale alone in the low i16 of each lane (high i16 zero).
        const __m512i scale = h == 0 ? _mm512_and_si512(pairs, _mm512_set1_epi32(0xFFFF)) : _mm512_srli_epi32(pairs, 16);
        for (int xi = 0; xi < NX; ++xi) {
          const int8_t* xq = xb[xi]->qs + 16 * s;
          __m512i sum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q[0], quad(xq));
          for (int t = 1; t < 4; ++t) sum = _mm512_dpbusd_epi32(sum, q[t], quad(xq + 4 * t));
          isum[xi] = _mm512_dpwssd_epi32(isum[xi], sum, scale);
        }
      }
      for (int xi = 0; xi < NX; ++xi) osum[xi] = _mm512_dpwssd_epi32(osum[xi], offsets, quad(xb[xi]->bsums + 2 * j));
    }
    const __m512 d = row_halves(wa.d, wb.d);
    [[maybe_unused]] __m512 dmin;
    if constexpr (!kThirdBit) dmin = row_halves(wa.dmin, wb.dmin);
    for (int xi = 0; xi < NX; ++xi) {
      const __m512 dx = _mm512_set1_ps(xb[xi]->d);
      if constexpr (kThirdBit) {
        const __m512i total = _mm512_sub_epi32(isum[xi], _mm512_slli_epi32(osum[xi], 2));
        acc[xi] = _mm512_fmadd_ps(_mm512_mul_ps(d, dx), _mm512_cvtepi32_ps(total), acc[xi]);
      } else {
        acc[xi] = _mm512_fmadd_ps(_mm512_mul_ps(d, dx), _mm512_cvtepi32_ps(isum[xi]), acc[xi]);
        acc[xi] = _mm512_fnmadd_ps(_mm512_mul_ps(dmin, dx), _mm512_cvtepi32_ps(osum[xi]), acc[xi]);
      }
    }
  }
  for (int xi = 0; xi < NX; ++xi) _mm512_storeu_ps(y + xi * y_stride, acc[xi]);
}

template <typename Group>
using PairFixed = void (*)(const Group*, const Group*, int64_t, const BlockQ8K*, size_t, float*, size_t);

// nx activation rows in tiles of up to kPairTileX.
template <typename Group, const PairFixed<Group>* Fixed>
void in_tiles(const void* groups, size_t group_bytes, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx,
              float* y, size_t y_stride) {
  const auto* first = static_cast<const Group*>(groups);
  const auto* second = reinterpret_cast<const Group*>(static_cast<const uint8_t*>(groups) + group_bytes);
  for (int x0 = 0; x0 < nx; x0 += kPairTileX) {
    const int n = nx - x0 < kPairTileX ? nx - x0 : kPairTileX;
    Fixed[n - 1](first, second, nb, x + x0 * x_row_blocks, x_row_blocks, y + x0 * y_stride, y_stride);
  }
}

constexpr PairFixed<BlockQ4Kx8> kQ4Fixed[kPairTileX] = {
    k4_pair_fixed<BlockQ4Kx8, 1>, k4_pair_fixed<BlockQ4Kx8, 2>, k4_pair_fixed<BlockQ4Kx8, 3>,
    k4_pair_fixed<BlockQ4Kx8, 4>, k4_pair_fixed<BlockQ4Kx8, 5>, k4_pair_fixed<BlockQ4Kx8, 6>,
    k4_pair_fixed<BlockQ4Kx8, 7>, k4_pair_fixed<BlockQ4Kx8, 8>};
constexpr PairFixed<BlockQ5Kx8> kQ5Fixed[kPairTileX] = {
    k4_pair_fixed<BlockQ5Kx8, 1>, k4_pair_fixed<BlockQ5Kx8, 2>, k4_pair_fixed<BlockQ5Kx8, 3>,
    k4_pair_fixed<BlockQ5Kx8, 4>, k4_pair_fixed<BlockQ5Kx8, 5>, k4_pair_fixed<BlockQ5Kx8, 6>,
    k4_pair_fixed<BlockQ5Kx8, 7>, k4_pair_fixed<BlockQ5Kx8, 8>};
constexpr PairFixed<BlockQ6Kx8> kQ6Fixed[kPairTileX] = {q6_k_pair_fixed<1>, q6_k_pair_fixed<2>, q6_k_pair_fixed<3>,
                                                        q6_k_pair_fixed<4>, q6_k_pair_fixed<5>, q6_k_pair_fixed<6>,
                                                        q6_k_pair_fixed<7>, q6_k_pair_fixed<8>};

constexpr PairFixed<BlockQ2Kx8> kQ2Fixed[kPairTileX] = {
    low_bit_pair_fixed<BlockQ2Kx8, 1>, low_bit_pair_fixed<BlockQ2Kx8, 2>, low_bit_pair_fixed<BlockQ2Kx8, 3>,
    low_bit_pair_fixed<BlockQ2Kx8, 4>, low_bit_pair_fixed<BlockQ2Kx8, 5>, low_bit_pair_fixed<BlockQ2Kx8, 6>,
    low_bit_pair_fixed<BlockQ2Kx8, 7>, low_bit_pair_fixed<BlockQ2Kx8, 8>};
constexpr PairFixed<BlockQ3Kx8> kQ3Fixed[kPairTileX] = {
    low_bit_pair_fixed<BlockQ3Kx8, 1>, low_bit_pair_fixed<BlockQ3Kx8, 2>, low_bit_pair_fixed<BlockQ3Kx8, 3>,
    low_bit_pair_fixed<BlockQ3Kx8, 4>, low_bit_pair_fixed<BlockQ3Kx8, 5>, low_bit_pair_fixed<BlockQ3Kx8, 6>,
    low_bit_pair_fixed<BlockQ3Kx8, 7>, low_bit_pair_fixed<BlockQ3Kx8, 8>};

}  // namespace

void q4_k_pair_avx512_vnni(const void* groups, size_t group_bytes, int64_t nb, const BlockQ8K* x, size_t x_row_blocks,
                           int nx, float* y, size_t y_stride) {
  in_tiles<BlockQ4Kx8, kQ4Fixed>(groups, group_bytes, nb, x, x_row_blocks, nx, y, y_stride);
}

void q5_k_pair_avx512_vnni(const void* groups, size_t group_bytes, int64_t nb, const BlockQ8K* x, size_t x_row_blocks,
                           int nx, float* y, size_t y_stride) {
  in_tiles<BlockQ5Kx8, kQ5Fixed>(groups, group_bytes, nb, x, x_row_blocks, nx, y, y_stride);
}

void q6_k_pair_avx512_vnni(const void* groups, size_t group_bytes, int64_t nb, const BlockQ8K* x, size_t x_row_blocks,
                           int nx, float* y, size_t y_stride) {
  in_tiles<BlockQ6Kx8, kQ6Fixed>(groups, group_bytes, nb, x, x_row_blocks, nx, y, y_stride);
}

void q2_k_pair_avx512_vnni(const void* groups, size_t group_bytes, int64_t nb, const BlockQ8K* x, size_t x_row_blocks,
                           int nx, float* y, size_t y_stride) {
  in_tiles<BlockQ2Kx8, kQ2Fixed>(groups, group_bytes, nb, x, x_row_blocks, nx, y, y_stride);
}

void q3_k_pair_avx512_vnni(const void* groups, size_t group_bytes, int64_t nb, const BlockQ8K* x, size_t x_row_blocks,
                           int nx, float* y, size_t y_stride) {
  in_tiles<BlockQ3Kx8, kQ3Fixed>(groups, group_bytes, nb, x, x_row_blocks, nx, y, y_stride);
}

}  // namespace tessera::ggml
