// kquant_panels_amx.cpp: the repacked K-quants (BlockQ4Kx8, BlockQ5Kx8,
// BlockQ6Kx8) against many activation rows on AMX-INT8 tiles, and the amx
// level's kernel table (the avx512_vnni table with these panels). Compiled
// with the avx512_vnni flags plus -mamx-tile -mamx-int8.
//
// A panel is 16 weight rows (two consecutive groups of 8) by a multiple of 16
// activation rows. One tile product (tdpbsud: signed activation bytes times
// unsigned weight bytes, summed in i32) takes one sub-block's K: 32 quants for
// Q4_K/Q5_K (their 6-bit scale and minimum are per 32), 16 for Q6_K (its
// scale is per 16). Each sub-block's 16 x 16 sums then leave the tile through
// memory and are multiplied by the 16 rows' scales in i32, so the super-block
// sums are the exact integers of the scalar group kernel (kquant_groups_scalar.cpp),
// and the f32 close takes KQuantGroupFn's steps: every result is the scalar
// group kernel's to the bit (KQuantLevel.PanelsMatchTheScalarGroups).
//
// The weight tiles of a super-block are unpacked once (nibbles to bytes, in
// the layout tdpbsud reads: row kk of the B tile holds quants 4kk..4kk+3 of
// each of the 16 rows) and used for every activation tile; the activation
// tiles are read straight from the Q8_K rows (a tile load takes a stride).
#include <immintrin.h>

#include <cstring>

#include "kernels.hpp"

namespace tessera::ggml {
namespace {

constexpr int kPanelRows = 2 * kRepackRows;  // weight rows: one tile's 16 i32 columns
constexpr int kTileRows = 16;                // activation rows per tile

// Palette 1's configuration block (64 bytes, as ldtilecfg reads it).
struct alignas(64) TileConfig {
  uint8_t palette_id;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
static_assert(sizeof(TileConfig) == 64);

// Tiles 0, 1: sums (16 activation rows x 16 i32); 2, 3: activations (16 rows
// x k bytes); 4, 5: weights (k / 4 rows x 16 rows x 4 bytes). Two of each so
// that two sub-blocks are in flight.
void configure_tiles(int k) {
  TileConfig c{};
  c.palette_id = 1;
  for (int t = 0; t < 2; ++t) {
    c.rows[t] = kTileRows;
    c.colsb[t] = 64;
    c.rows[2 + t] = kTileRows;
    c.colsb[2 + t] = static_cast<uint16_t>(k);
    c.rows[4 + t] = static_cast<uint8_t>(k / 4);
    c.colsb[4 + t] = 64;
  }
  _tile_loadconfig(&c);
}

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

// isum[m] += c[m] * scale (i32, exact: |c| < 2^17, |scale| < 2^7, 16 terms).
inline void add_scaled(const int32_t (&c)[kTileRows][kPanelRows], __m512i scale, __m512i* isum) {
#pragma GCC unroll 16
  for (int m = 0; m < kTileRows; ++m)
    isum[m] = _mm512_add_epi32(isum[m], _mm512_mullo_epi32(_mm512_load_si512(c[m]), scale));
}

// One super-block's unpacked weights and per-row factors for a panel.
struct alignas(64) PanelBlock {
  uint8_t b[16][8][64];        // [sub-block][kk][16 rows x 4 quants] (Q4_K/Q5_K use 8 sub-blocks of 8 kk rows)
  int32_t scale[16][16];       // [sub-block][row]
  int32_t offset_pairs[8][16]; // [j][row]: the i16 pair (mins or Q6_K scales) sub-blocks 2j, 2j + 1
};

// Q4_K and Q5_K: sub-block j is run j of the x8 layout; chunk t's low nibbles
// are quants 4t..4t+3 of the run (B row t), its high nibbles 16 + 4t.. (row 4 + t).
template <bool kFifthBit, typename Group>
void unpack_k4(const Group& g0, const Group& g1, PanelBlock& p) {
  const __m512i low4 = _mm512_set1_epi8(0x0F), bit4 = _mm512_set1_epi8(0x10);
  for (int j = 0; j < 8; ++j) {
    __m512i qh = _mm512_setzero_si512();
    if constexpr (kFifthBit) qh = concat(g0.qh[j], g1.qh[j]);
    for (int t = 0; t < 4; ++t) {
      const __m512i v = concat(g0.qs[j][t], g1.qs[j][t]);
      __m512i lo = _mm512_and_si512(v, low4);
      __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
      if constexpr (kFifthBit) {  // bit t of qh: the low nibble's fifth bit; bit 4 + t: the high one's
        lo = _mm512_or_si512(lo, _mm512_and_si512(_mm512_sll_epi16(qh, _mm_cvtsi32_si128(4 - t)), bit4));
        hi = _mm512_or_si512(hi, _mm512_and_si512(_mm512_srl_epi16(qh, _mm_cvtsi32_si128(t)), bit4));
      }
      _mm512_store_si512(p.b[j][t], lo);
      _mm512_store_si512(p.b[j][4 + t], hi);
    }
    _mm512_store_si512(p.scale[j], rows_u8(g0.scales[j], g1.scales[j]));
    const __m512i mins = rows_u8(g0.mins[j], g1.mins[j]);
    _mm512_store_si512(p.offset_pairs[j], _mm512_or_si512(mins, _mm512_slli_epi32(mins, 16)));
  }
}

// Q6_K: run j holds sub-blocks 2j (low nibbles) and 2j + 1 (high nibbles);
// B row t of a sub-block is chunk t with its two high bits from qh[j][t / 2].
void unpack_q6(const BlockQ6Kx8& g0, const BlockQ6Kx8& g1, PanelBlock& p) {
  const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
  for (int j = 0; j < 8; ++j) {
    for (int u = 0; u < 2; ++u) {
      const __m512i qh = concat(g0.qh[j][u], g1.qh[j][u]);
      for (int v = 0; v < 2; ++v) {
        const int t = 2 * u + v;
        const __m512i ql = concat(g0.ql[j][t], g1.ql[j][t]);
        const __m512i high_lo = v == 0 ? _mm512_slli_epi16(qh, 4) : _mm512_slli_epi16(qh, 2);
        const __m512i high_hi = v == 0 ? qh : _mm512_srli_epi16(qh, 2);
        _mm512_store_si512(p.b[2 * j][t], _mm512_or_si512(_mm512_and_si512(ql, low4), _mm512_and_si512(high_lo, bits45)));
        _mm512_store_si512(p.b[2 * j + 1][t], _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4),
                                                              _mm512_and_si512(high_hi, bits45)));
      }
    }
    // scales[j][r] = (sub-block 2j, 2j + 1) of row r: 16 bytes per group, as i16 pairs per i32 lane.
    const __m128i s0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(g0.scales[j]));
    const __m128i s1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(g1.scales[j]));
    const __m512i pairs = _mm512_cvtepi8_epi16(_mm256_inserti128_si256(_mm256_castsi128_si256(s0), s1, 1));
    _mm512_store_si512(p.offset_pairs[j], pairs);
    _mm512_store_si512(p.scale[2 * j], _mm512_srai_epi32(_mm512_slli_epi32(pairs, 16), 16));
    _mm512_store_si512(p.scale[2 * j + 1], _mm512_srai_epi32(pairs, 16));
  }
}

// The integer sums of one activation tile against one super-block:
// isum[m] = sum over the sub-blocks of scale(row) * (sub-block product).
// K: quants per sub-block (32 or 16), kSub sub-blocks.
template <int K, int kSub>
void tile_sums(const PanelBlock& p, const int8_t* x_qs, size_t x_stride, __m512i* isum) {
  alignas(64) int32_t c[2][kTileRows][kPanelRows];
  for (int m = 0; m < kTileRows; ++m) isum[m] = _mm512_setzero_si512();
  for (int s = 0; s < kSub; s += 2) {
    _tile_loadd(2, x_qs + K * s, x_stride);
    _tile_loadd(4, p.b[s], 64);
    _tile_zero(0);
    _tile_dpbsud(0, 2, 4);
    _tile_loadd(3, x_qs + K * (s + 1), x_stride);
    _tile_loadd(5, p.b[s + 1], 64);
    _tile_zero(1);
    _tile_dpbsud(1, 3, 5);
    _tile_stored(0, c[0], 64);
    _tile_stored(1, c[1], 64);
    add_scaled(c[0], _mm512_load_si512(p.scale[s]), isum);
    add_scaled(c[1], _mm512_load_si512(p.scale[s + 1]), isum);
  }
}

// sum over j of the pair (offset of 2j, of 2j + 1) times the activations' sums per 16.
inline __m512i offset_sum(const PanelBlock& p, const BlockQ8K& x) {
  __m512i acc = _mm512_setzero_si512();
  for (int j = 0; j < 8; ++j) acc = _mm512_dpwssd_epi32(acc, _mm512_load_si512(p.offset_pairs[j]), bsum_pair(x, j));
  return acc;
}

template <typename Group, bool kFifthBit>
void k4_panel(const void* groups, size_t group_bytes, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx,
              float* y, size_t y_stride) {
  configure_tiles(32);
  const auto* g0 = static_cast<const Group*>(groups);
  const auto* g1 = reinterpret_cast<const Group*>(static_cast<const uint8_t*>(groups) + group_bytes);
  const size_t x_stride = x_row_blocks * sizeof(BlockQ8K);
  PanelBlock p;
  for (int64_t b = 0; b < nb; ++b) {
    unpack_k4<kFifthBit>(g0[b], g1[b], p);
    const __m512 d = rows_f16(g0[b].d, g1[b].d), dmin = rows_f16(g0[b].dmin, g1[b].dmin);
    for (int m0 = 0; m0 < nx; m0 += kTileRows) {
      __m512i isum[kTileRows];
      tile_sums<32, 8>(p, x[m0 * x_row_blocks + b].qs, x_stride, isum);
      for (int m = 0; m < kTileRows; ++m) {
        const BlockQ8K& xb = x[(m0 + m) * x_row_blocks + b];
        float* out = y + (m0 + m) * y_stride;
        const __m512 dx = _mm512_set1_ps(xb.d);
        __m512 acc = b == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(out);
        acc = _mm512_fmadd_ps(_mm512_mul_ps(d, dx), _mm512_cvtepi32_ps(isum[m]), acc);
        acc = _mm512_fnmadd_ps(_mm512_mul_ps(dmin, dx), _mm512_cvtepi32_ps(offset_sum(p, xb)), acc);
        _mm512_storeu_ps(out, acc);
      }
    }
  }
  _tile_release();
}

void q6_k_panel(const void* groups, size_t group_bytes, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx,
                float* y, size_t y_stride) {
  configure_tiles(16);
  const auto* g0 = static_cast<const BlockQ6Kx8*>(groups);
  const auto* g1 = reinterpret_cast<const BlockQ6Kx8*>(static_cast<const uint8_t*>(groups) + group_bytes);
  const size_t x_stride = x_row_blocks * sizeof(BlockQ8K);
  PanelBlock p;
  for (int64_t b = 0; b < nb; ++b) {
    unpack_q6(g0[b], g1[b], p);
    const __m512 d = rows_f16(g0[b].d, g1[b].d);
    for (int m0 = 0; m0 < nx; m0 += kTileRows) {
      __m512i isum[kTileRows];
      tile_sums<16, 16>(p, x[m0 * x_row_blocks + b].qs, x_stride, isum);
      for (int m = 0; m < kTileRows; ++m) {
        const BlockQ8K& xb = x[(m0 + m) * x_row_blocks + b];
        float* out = y + (m0 + m) * y_stride;
        // The quants are stored + 32: subtract 32 * sum(scale * activation sum per 16).
        const __m512i total = _mm512_sub_epi32(isum[m], _mm512_slli_epi32(offset_sum(p, xb), 5));
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
    return t;
  }();
  return table;
}

}  // namespace tessera::ggml
