// kquant_panels_amx.cpp: the repacked K-quants (BlockQ4Kx8, BlockQ5Kx8,
// BlockQ6Kx8) against many activation rows on AMX-INT8 tiles, and the amx
// level's kernel table (the avx512_vnni table with these panels and the block
// layouts', repack16_panels_amx.cpp). Compiled
// with the avx512_vnni flags plus -mamx-tile -mamx-int8.
//
// A panel is 16 weight rows (two consecutive groups of 8) by a multiple of 16
// activation rows; tdpbsud multiplies signed activation bytes by unsigned
// weight bytes and sums in i32. The super-block sums must come out as the
// exact integers of the scalar group kernel (kquant_groups_scalar.cpp), whose
// f32 close the panels then repeat step for step: every result is the scalar
// group kernel's to the bit (KQuantLevel.PanelsMatchTheScalarGroups).
//
// Q4_K and Q5_K scale each run of 32 quants by a 6-bit sc. Split as
// sc = 8 sh + sl, q * sl and q * sh fit a byte (31 * 7 = 217), so the weight
// tiles hold the quants already multiplied by sl and by sh, and two tile
// products over the whole super-block (K = 256: four K = 64 steps, one sum
// tile each) give isum = S_lo + 8 S_hi: one readout per super-block instead of
// one per run. Q6_K's signed 8-bit scale per 16 goes in four base-4 digits
// (q * 3 = 189 fits a byte; the top digit, -2..1, a signed one): four
// products over the super-block, isum = S0 + 4 S1 + 16 S2 + 64 S3.
//
// The weight tiles of a super-block are unpacked once (nibbles to bytes, in
// the layout tdpbsud reads: row kk of a B tile holds quants 4kk..4kk+3 of each
// of the 16 rows) and used for every activation tile; the activation tiles
// come from the quants in tile order (panel_quants, kernels.hpp), 1 KiB each.
#include <immintrin.h>

#include <cstring>

#include "kernels.hpp"
#include "tessera/amx_tiles.hpp"

namespace tessera::ggml {
namespace {

// kPanelRows (kernels.hpp) weight rows: one tile's 16 i32 columns.
constexpr int kTileRows = kPanelTileX;  // activation rows per tile
static_assert(kPanelRows == 2 * kRepackRows && kPanelRows == 16);
static_assert(kPanelStep == 64 && kPanelSteps == 4);  // four K = 64 steps a super-block

inline __m512i concat(const void* lo32, const void* hi32) {
  const __m256i lo = _mm256_loadu_si256(static_cast<const __m256i*>(lo32));
  const __m256i hi = _mm256_loadu_si256(static_cast<const __m256i*>(hi32));
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

// 8 bytes of each group (one per row) as 16 zero-extended i32.
inline __m512i rows_u8(const uint8_t* g0, const uint8_t* g1) {
  int64_t a, b;
  std::memcpy(&a, g0, 8);
  std::memcpy(&b, g1, 8);
  return _mm512_cvtepu8_epi32(_mm_set_epi64x(b, a));
}

// 8 f16 of each group as 16 f32.
inline __m512 rows_f16(const uint16_t* g0, const uint16_t* g1) {
  const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(g0));
  const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(g1));
  return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1));
}

// The activations' two sums per 16 of sub-block pair j, broadcast as an i16 pair.
inline __m512i bsum_pair(const BlockQ8K& x, int j) {
  int32_t v;
  std::memcpy(&v, x.bsums + 2 * j, 4);
  return _mm512_set1_epi32(v);
}

// Every tile 16 rows of 64 bytes (configure_16x64_tiles): K = 64 per
// product. Q4_K/Q5_K: tiles 0-3 the sums S_lo and S_hi of two activation
// tiles, 4, 5 the two activation tiles, 6, 7 the weights times sl and times
// sh; Q6_K: q6_k_panel.
static_assert(kTileRows == 16);

// One super-block of a Q4_K/Q5_K panel, unpacked. B tile row kk of step s
// holds quants 64s + 4kk .. + 3 of the 16 rows: run j = 2s + kk / 8, its low
// nibbles (the run's quants 4t..) for kk % 8 = t < 4, high (16 + 4t..) above.
struct alignas(64) K4Block {
  uint8_t lo[4][16][64];          // [step][kk][16 rows x 4]: q * (sc & 7)
  uint8_t hi[4][16][64];          // q * (sc >> 3)
  int32_t min_pairs[4][16];       // [i][row]: the minimums of runs 2i, 2i + 1 as an i16 pair
};

// sc's digit as the i16 pair of each row's lane: a vpmullw by it multiplies
// the two quant bytes of each 16-bit half separately (q * digit < 256: no carry).
inline __m512i digit_pairs(__m512i digit32) { return _mm512_or_si512(digit32, _mm512_slli_epi32(digit32, 16)); }

template <bool kFifthBit, typename Group>
void unpack_k4(const Group& g0, const Group& g1, K4Block& p) {
  const __m512i low4 = _mm512_set1_epi8(0x0F), bit4 = _mm512_set1_epi8(0x10), seven = _mm512_set1_epi32(7);
  for (int j = 0; j < 8; ++j) {
    const __m512i sc = rows_u8(g0.scales[j], g1.scales[j]);
    const __m512i sl = digit_pairs(_mm512_and_si512(sc, seven));
    const __m512i sh = digit_pairs(_mm512_srli_epi32(sc, 3));
    __m512i qh = _mm512_setzero_si512();
    if constexpr (kFifthBit) qh = concat(g0.qh[j], g1.qh[j]);
    const int step = j / 2, row0 = 8 * (j % 2);
    for (int t = 0; t < 4; ++t) {
      const __m512i v = concat(g0.qs[j][t], g1.qs[j][t]);
      __m512i lo = _mm512_and_si512(v, low4);
      __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
      if constexpr (kFifthBit) {  // bit t of qh: the low nibble's fifth bit; bit 4 + t: the high one's
        lo = _mm512_or_si512(lo, _mm512_and_si512(_mm512_sll_epi16(qh, _mm_cvtsi32_si128(4 - t)), bit4));
        hi = _mm512_or_si512(hi, _mm512_and_si512(_mm512_srl_epi16(qh, _mm_cvtsi32_si128(t)), bit4));
      }
      _mm512_store_si512(p.lo[step][row0 + t], _mm512_mullo_epi16(lo, sl));
      _mm512_store_si512(p.lo[step][row0 + 4 + t], _mm512_mullo_epi16(hi, sl));
      _mm512_store_si512(p.hi[step][row0 + t], _mm512_mullo_epi16(lo, sh));
      _mm512_store_si512(p.hi[step][row0 + 4 + t], _mm512_mullo_epi16(hi, sh));
    }
    if (j % 2 == 1) {
      const __m512i m_even = rows_u8(g0.mins[j - 1], g1.mins[j - 1]), m_odd = rows_u8(g0.mins[j], g1.mins[j]);
      _mm512_store_si512(p.min_pairs[j / 2], _mm512_or_si512(m_even, _mm512_slli_epi32(m_odd, 16)));
    }
  }
}

// sum over j of the pair (factor of 2j, of 2j + 1) times the activations' sums per 16 (Q6_K's scales).
inline __m512i offset_sum(const int32_t (&pairs)[8][16], const BlockQ8K& x) {
  __m512i acc = _mm512_setzero_si512();
  for (int j = 0; j < 8; ++j) acc = _mm512_dpwssd_epi32(acc, _mm512_load_si512(pairs[j]), bsum_pair(x, j));
  return acc;
}

// sum over runs j of the minimum of j times the activations' run sum (4 pairs of runs).
inline __m512i min_sum(const int32_t (&pairs)[4][16], const int16_t* run_sums) {
  __m512i acc = _mm512_setzero_si512();
  for (int i = 0; i < 4; ++i) {
    int32_t v;
    std::memcpy(&v, run_sums + 2 * i, 4);
    acc = _mm512_dpwssd_epi32(acc, _mm512_load_si512(pairs[i]), _mm512_set1_epi32(v));
  }
  return acc;
}

// The f32 close of one super-block for 16 activation rows (KQuantGroupFn's
// steps); run_sums: the first row's run sums of this block (kPanelRuns apart).
inline void close_k4(const int32_t (&s_lo)[kTileRows][kPanelRows], const int32_t (&s_hi)[kTileRows][kPanelRows],
                     const K4Block& p, __m512 d, __m512 dmin, const BlockQ8K* x, size_t x_row_blocks,
                     const int16_t* run_sums, bool first, float* y, size_t y_stride) {
  for (int m = 0; m < kTileRows; ++m) {
    const BlockQ8K& xb = x[m * x_row_blocks];
    const __m512i isum =
        _mm512_add_epi32(_mm512_load_si512(s_lo[m]), _mm512_slli_epi32(_mm512_load_si512(s_hi[m]), 3));
    float* out = y + m * y_stride;
    const __m512 dx = _mm512_set1_ps(xb.d);
    __m512 acc = first ? _mm512_setzero_ps() : _mm512_loadu_ps(out);
    acc = _mm512_fmadd_ps(_mm512_mul_ps(d, dx), _mm512_cvtepi32_ps(isum), acc);
    acc = _mm512_fnmadd_ps(_mm512_mul_ps(dmin, dx), _mm512_cvtepi32_ps(min_sum(p.min_pairs, run_sums + m * kPanelRuns)),
                           acc);
    _mm512_storeu_ps(out, acc);
  }
}

template <typename Group, bool kFifthBit>
void k4_panel(const void* groups, size_t group_bytes, int64_t nb, const BlockQ8K* x, size_t x_row_blocks,
              const PanelActivations& xa_all, int nx, float* y, size_t y_stride) {
  configure_16x64_tiles();
  const auto* g0 = static_cast<const Group*>(groups);
  const auto* g1 = reinterpret_cast<const Group*>(static_cast<const uint8_t*>(groups) + group_bytes);
  K4Block p;
  alignas(64) int32_t c[4][kTileRows][kPanelRows];
  for (int64_t b = 0; b < nb; ++b) {
    unpack_k4<kFifthBit>(g0[b], g1[b], p);
    tile_memory_fence();  // p is read by tile loads
    const __m512 d = rows_f16(g0[b].d, g1[b].d), dmin = rows_f16(g0[b].dmin, g1[b].dmin);
    int m0 = 0;
    for (; m0 + 2 * kTileRows <= nx; m0 += 2 * kTileRows) {  // two activation tiles share each weight tile load
      const BlockQ8K* xa = x + m0 * x_row_blocks + b;
      const BlockQ8K* xb = xa + kTileRows * x_row_blocks;
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (int step = 0; step < 4; ++step) {
        const int8_t* tile = xa_all.tile(b, step, m0);
        _tile_loadd(4, tile, kPanelStep);
        _tile_loadd(5, tile + kTileRows * kPanelStep, kPanelStep);
        _tile_loadd(6, p.lo[step], 64);
        _tile_loadd(7, p.hi[step], 64);
        _tile_dpbsud(0, 4, 6);
        _tile_dpbsud(1, 4, 7);
        _tile_dpbsud(2, 5, 6);
        _tile_dpbsud(3, 5, 7);
      }
      _tile_stored(0, c[0], 64);
      _tile_stored(1, c[1], 64);
      _tile_stored(2, c[2], 64);
      _tile_stored(3, c[3], 64);
      tile_memory_fence();  // c was written by tile stores
      close_k4(c[0], c[1], p, d, dmin, xa, x_row_blocks, xa_all.runs(b, m0), b == 0, y + m0 * y_stride,
               y_stride);
      close_k4(c[2], c[3], p, d, dmin, xb, x_row_blocks, xa_all.runs(b, m0 + kTileRows), b == 0,
               y + (m0 + kTileRows) * y_stride, y_stride);
    }
    if (m0 < nx) {  // an odd last activation tile
      const BlockQ8K* xa = x + m0 * x_row_blocks + b;
      _tile_zero(0);
      _tile_zero(1);
      for (int step = 0; step < 4; ++step) {
        _tile_loadd(4, xa_all.tile(b, step, m0), kPanelStep);
        _tile_loadd(6, p.lo[step], 64);
        _tile_loadd(7, p.hi[step], 64);
        _tile_dpbsud(0, 4, 6);
        _tile_dpbsud(1, 4, 7);
      }
      _tile_stored(0, c[0], 64);
      _tile_stored(1, c[1], 64);
      tile_memory_fence();
      close_k4(c[0], c[1], p, d, dmin, xa, x_row_blocks, xa_all.runs(b, m0), b == 0, y + m0 * y_stride,
               y_stride);
    }
  }
  _tile_release();
}

// One super-block of a Q6_K panel, unpacked, rows and steps as K4Block's:
// the signed 8-bit scale of each 16 written in base 4,
// sc = 64 d3 + 16 d2 + 4 d1 + d0 (d0..d2 in 0..3, d3 in -2..1), and the
// weight tiles hold q * d for each digit (q * 3 <= 189 fits an unsigned byte,
// q * d3 a signed one), so isum = S0 + 4 S1 + 16 S2 + 64 S3 over the whole
// super-block, one readout instead of one per sub-block of 16.
struct alignas(64) Q6Block {
  uint8_t digit[4][4][16][64];    // [digit][step][kk][16 rows x 4]
  int32_t scale_pairs[8][16];     // [run][row]: the scales of sub-blocks 2j, 2j + 1 as an i16 pair
};

// q (bytes of 0..63) times a signed digit per row (i16 pairs) as signed bytes:
// even and odd bytes apart, so a negative product borrows nothing from its neighbour.
inline __m512i times_signed_digit(__m512i q, __m512i digit) {
  const __m512i even = _mm512_mullo_epi16(_mm512_and_si512(q, _mm512_set1_epi16(0x00FF)), digit);
  const __m512i odd = _mm512_mullo_epi16(_mm512_srli_epi16(q, 8), digit);
  return _mm512_or_si512(_mm512_and_si512(even, _mm512_set1_epi16(0x00FF)), _mm512_slli_epi16(odd, 8));
}

// The four digit tiles' rows kk of one sub-block's chunk of quants q6, its scales sc (i32 per row).
inline void store_digits(Q6Block& p, int step, int kk, __m512i q6, __m512i sc) {
  const __m512i three = _mm512_set1_epi32(3);
  for (int d = 0; d < 3; ++d) {
    const __m512i digit = digit_pairs(_mm512_and_si512(_mm512_srai_epi32(sc, 2 * d), three));
    _mm512_store_si512(p.digit[d][step][kk], _mm512_mullo_epi16(q6, digit));
  }
  const __m512i top = _mm512_srai_epi32(sc, 6);  // -2..1
  const __m512i top_pairs = _mm512_or_si512(_mm512_and_si512(top, _mm512_set1_epi32(0xFFFF)), _mm512_slli_epi32(top, 16));
  _mm512_store_si512(p.digit[3][step][kk], times_signed_digit(q6, top_pairs));
}

// Run j of the x8 layout: sub-block 2j in the low nibbles (with bits 2v.. of
// qh[j][u] for chunk t = 2u + v), 2j + 1 in the high nibbles (bits 4 + 2v..).
void unpack_q6(const BlockQ6Kx8& g0, const BlockQ6Kx8& g1, Q6Block& p) {
  const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
  for (int j = 0; j < 8; ++j) {
    // scales[j][r] = (sub-block 2j, 2j + 1) of row r: 16 bytes per group, as i16 pairs per i32 lane.
    const __m128i s0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(g0.scales[j]));
    const __m128i s1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(g1.scales[j]));
    const __m512i pairs = _mm512_cvtepi8_epi16(_mm256_inserti128_si256(_mm256_castsi128_si256(s0), s1, 1));
    _mm512_store_si512(p.scale_pairs[j], pairs);
    const __m512i sc_low = _mm512_srai_epi32(_mm512_slli_epi32(pairs, 16), 16), sc_high = _mm512_srai_epi32(pairs, 16);
    const int step = j / 2, row0 = 8 * (j % 2);
    for (int u = 0; u < 2; ++u) {
      const __m512i qh = concat(g0.qh[j][u], g1.qh[j][u]);
      for (int v = 0; v < 2; ++v) {
        const int t = 2 * u + v;
        const __m512i ql = concat(g0.ql[j][t], g1.ql[j][t]);
        const __m512i high_lo = v == 0 ? _mm512_slli_epi16(qh, 4) : _mm512_slli_epi16(qh, 2);
        const __m512i high_hi = v == 0 ? qh : _mm512_srli_epi16(qh, 2);
        store_digits(p, step, row0 + t,
                     _mm512_or_si512(_mm512_and_si512(ql, low4), _mm512_and_si512(high_lo, bits45)), sc_low);
        store_digits(p, step, row0 + 4 + t,
                     _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4), _mm512_and_si512(high_hi, bits45)),
                     sc_high);
      }
    }
  }
}

void q6_k_panel(const void* groups, size_t group_bytes, int64_t nb, const BlockQ8K* x, size_t x_row_blocks,
                const PanelActivations& xa_all, int nx, float* y, size_t y_stride) {
  configure_16x64_tiles();
  const auto* g0 = static_cast<const BlockQ6Kx8*>(groups);
  const auto* g1 = reinterpret_cast<const BlockQ6Kx8*>(static_cast<const uint8_t*>(groups) + group_bytes);
  Q6Block p;
  alignas(64) int32_t c[4][kTileRows][kPanelRows];
  for (int64_t b = 0; b < nb; ++b) {
    unpack_q6(g0[b], g1[b], p);
    tile_memory_fence();  // p is read by tile loads
    const __m512 d = rows_f16(g0[b].d, g1[b].d);
    for (int m0 = 0; m0 < nx; m0 += kTileRows) {
      const BlockQ8K* xa = x + m0 * x_row_blocks + b;
      // Tiles 0-3: S0..S3; 4: the activations; 5, 6: the digit tiles in turn.
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (int step = 0; step < 4; ++step) {
        _tile_loadd(4, xa_all.tile(b, step, m0), kPanelStep);
        _tile_loadd(5, p.digit[0][step], 64);
        _tile_dpbsud(0, 4, 5);
        _tile_loadd(6, p.digit[1][step], 64);
        _tile_dpbsud(1, 4, 6);
        _tile_loadd(5, p.digit[2][step], 64);
        _tile_dpbsud(2, 4, 5);
        _tile_loadd(6, p.digit[3][step], 64);
        _tile_dpbssd(3, 4, 6);  // the top digit is signed
      }
      _tile_stored(0, c[0], 64);
      _tile_stored(1, c[1], 64);
      _tile_stored(2, c[2], 64);
      _tile_stored(3, c[3], 64);
      tile_memory_fence();  // c was written by tile stores
      for (int m = 0; m < kTileRows; ++m) {
        const BlockQ8K& xb = xa[m * x_row_blocks];
        float* out = y + (m0 + m) * y_stride;
        __m512i isum = _mm512_load_si512(c[3][m]);
        for (int k = 2; k >= 0; --k) isum = _mm512_add_epi32(_mm512_slli_epi32(isum, 2), _mm512_load_si512(c[k][m]));
        // The quants are stored + 32: subtract 32 * sum(scale * activation sum per 16).
        const __m512i total = _mm512_sub_epi32(isum, _mm512_slli_epi32(offset_sum(p.scale_pairs, xb), 5));
        __m512 acc = b == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(out);
        acc = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(xb.d)), _mm512_cvtepi32_ps(total), acc);
        _mm512_storeu_ps(out, acc);
      }
    }
  }
  _tile_release();
}

}  // namespace

const KernelTable& amx_kernel_table() {
  static const KernelTable table = [] {
    KernelTable t = avx512_vnni_kernel_table();
    t.level = IsaLevel::amx;
    t.name = "amx";
    t.q4_k_panel = &k4_panel<BlockQ4Kx8, false>;
    t.q5_k_panel = &k4_panel<BlockQ5Kx8, true>;
    t.q6_k_panel = &q6_k_panel;
    add_repack16_panels(t);
    return t;
  }();
  return table;
}

}  // namespace tessera::ggml
