// repack16_panels_amx.cpp: the 16-row repacked block layouts (BlockQ4_0x16,
// BlockQ4_1x16, BlockQ5_0x16, BlockQ5_1x16, BlockQ8_0x16) against many
// activation rows on AMX-INT8 tiles, for prefill. Compiled with the
// avx512_vnni flags plus -mamx-tile -mamx-int8.
//
// A panel is the 16 weight rows of one repacked group by a multiple of 16
// activation rows. Each block of 32 has a scale per weight row and per
// activation row, so its sums are read out of the tile block by block: one
// tdpbssd with K = 32 (signed bytes both, i32 sums) per 16 x 16 outputs and
// block, where the VNNI group kernel issues eight vpdpbusd per activation
// row. The x16 layouts keep a block's quants as a B tile reads them (chunk
// k, 64 bytes: quants 4k..4k+3 of each of the 16 rows), so a call turns
// each block once, for all its activation tiles, into the signed weights
// q - excess (Q8_0's stored q + 128, Q5_0's 16, Q4_0's 8; the nibble
// layouts split, low nibbles to chunk k and high ones to chunk 4 + k, with
// Q5's fifth bits). The sums then need no q_offset, and the close per row
// and block is three instructions: the i32 sums converted, d times the
// row's dx, one fma (and Q4_1/Q5_1's m times s).
//
// The close repeats the VNNI group kernel (kernels_repack16_impl.hpp) step
// for step: acc = fma(d * dx, sum, acc) and, with a minimum,
// acc = fma(m, s, acc), in block order, on the same exact i32 sum
// (q_offset + sum(x (q + excess)) there, sum(x (q - excess)) here), so every
// result is that kernel's to the bit (KernelLevel.Repack16PanelsMatchTheGroups).
#include <immintrin.h>

#include <type_traits>
#include <vector>

#include "blocks.hpp"
#include "kernels.hpp"
#include "tessera/amx_tiles.hpp"

namespace tessera::ggml {
namespace {

constexpr int kTileRows = kPanelTileX;  // activation rows per tile
static_assert(kTileRows == 16 && kWideRepackRows == 16);
constexpr int kChunks = kBlock / 4;  // B tile rows: 4 quants of each weight row a row
struct alignas(64) Chunk {           // one B tile row: 4 quants of each of the 16 weight rows
  uint8_t bytes[64];
};

// Tiles 0, 1: the sums of two blocks (16 activation rows x 16 weight rows,
// i32); 2, 3: their activation tiles (16 rows of 32 quants); 4, 5: their
// weight tiles (8 rows of 64 bytes: 4 signed weights of each of the 16 rows).
void configure_block_tiles() {
  configure_tiles({16, 16, 16, 16, kChunks, kChunks, 0, 0}, {64, 64, kBlock, kBlock, 64, 64, 0, 0});
}

#include "repack16_nibbles.hpp"  // scales16, split_nibbles (shared with the VNNI group kernels)

// What the VNNI kernels' q_offset takes back out of each format's stored
// quants (repacked_quant_excess, quant_linear.hpp: the 16-row layouts).
template <typename Group>
constexpr int kExcess = std::is_same_v<Group, BlockQ8_0x16Pair> ? 128
                        : std::is_same_v<Group, BlockQ5_0x16>   ? 16
                        : std::is_same_v<Group, BlockQ4_0x16>   ? 8
                                                                : 0;

// Block b of a group as a B tile of signed weights q - excess at out (512 bytes).
template <typename Group>
void signed_weights(const void* group, int64_t nb, int64_t b, uint8_t* out) {
  const uint8_t* qs = GroupBlocks<Group>::qs(group, nb, b);
  const __m512i excess = _mm512_set1_epi8(static_cast<char>(kExcess<Group>));
  if constexpr (std::is_same_v<Group, BlockQ8_0x16Pair>) {  // whole bytes: q + 128 - 128 wraps to q
    for (int k = 0; k < kChunks; ++k)
      _mm512_store_si512(out + 64 * k, _mm512_sub_epi8(_mm512_loadu_si512(qs + 64 * k), excess));
  } else {
    constexpr bool kHighBits = std::is_same_v<Group, BlockQ5_0x16> || std::is_same_v<Group, BlockQ5_1x16>;
    for (int k = 0; k < 4; ++k) {
      __m512i lo, hi;
      split_nibbles<kHighBits>(qs, fifth_bit_masks<Group, kHighBits>(group, b), k, lo, hi);
      _mm512_store_si512(out + 64 * k, _mm512_sub_epi8(lo, excess));
      _mm512_store_si512(out + 64 * (4 + k), _mm512_sub_epi8(hi, excess));
    }
  }
}

// Block b's sums for the activation tile from row m0, in tile C. A macro:
// GCC's tile intrinsics paste the tile number into their asm text, so it
// must be a literal (a template parameter reaches the assembler as its name).
#define TESSERA_BLOCK_PRODUCT(C, A, B, b)           \
  do {                                              \
    _tile_zero(C);                                  \
    _tile_loadd(A, xa.tile((b), m0), kBlock);       \
    _tile_loadd(B, weights[(b)*kChunks].bytes, 64); \
    _tile_dpbssd(C, A, B);                          \
  } while (false)

// One block's sums (c, 16 activation rows of 16 i32) into the rows'
// accumulators; dx, sx: the 16 rows' d and s for the block.
template <bool kMin>
[[gnu::always_inline]] inline void close_block(const int32_t (&c)[kTileRows][kWideRepackRows], __m512 d, __m512 m,
                                               const float* dx, const float* sx, __m512 (&acc)[kTileRows]) {
#pragma GCC unroll 16
  for (int i = 0; i < kTileRows; ++i) {
    const __m512 sum = _mm512_cvtepi32_ps(_mm512_load_si512(c[i]));
    acc[i] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(dx[i])), sum, acc[i]);
    if constexpr (kMin) acc[i] = _mm512_fmadd_ps(m, _mm512_set1_ps(sx[i]), acc[i]);  // m * d_x * sum(q_x)
  }
}

// The panel. Group: the layout's block (BlockQ8_0x16Pair for Q8_0's pairs);
// kMin: Q4_1/Q5_1's minimum.
template <typename Group, bool kMin>
void panel(const void* group, int64_t nb, const BlockTiles& xa, int nx, float* y, size_t y_stride) {
  using Blocks = GroupBlocks<Group>;
  thread_local std::vector<Chunk> weights;  // [nb, 8 chunks] signed; grows, never shrinks
  if (weights.size() < static_cast<size_t>(nb) * kChunks) weights.resize(static_cast<size_t>(nb) * kChunks);
  for (int64_t b = 0; b < nb; ++b) signed_weights<Group>(group, nb, b, weights[b * kChunks].bytes);
  const auto minimums = [&](int64_t b) {
    if constexpr (kMin) return scales16(Blocks::block(group, b).m);
    return _mm512_setzero_ps();
  };
  configure_block_tiles();
  tile_memory_fence();  // weights is read by tile loads
  alignas(64) int32_t c[2][kTileRows][kWideRepackRows];
  for (int m0 = 0; m0 < nx; m0 += kTileRows) {
    __m512 acc[kTileRows];  // the 16 rows' outputs, in registers (close_block inlines)
    for (auto& a : acc) a = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b += 2) {  // two blocks at a time, in tiles 0 and 1
      const bool two = b + 1 < nb;
      TESSERA_BLOCK_PRODUCT(0, 2, 4, b);
      if (two) TESSERA_BLOCK_PRODUCT(1, 3, 5, b + 1);
      _tile_stored(0, c[0], 64);
      if (two) _tile_stored(1, c[1], 64);
      tile_memory_fence();  // c was written by tile stores
      close_block<kMin>(c[0], scales16(Blocks::d(group, nb, b)), minimums(b), xa.d + xa.at(b, m0), xa.s + xa.at(b, m0),
                        acc);
      if (two)
        close_block<kMin>(c[1], scales16(Blocks::d(group, nb, b + 1)), minimums(b + 1), xa.d + xa.at(b + 1, m0),
                          xa.s + xa.at(b + 1, m0), acc);
    }
    for (int i = 0; i < kTileRows; ++i) _mm512_storeu_ps(y + (m0 + i) * y_stride, acc[i]);
  }
  _tile_release();
}
#undef TESSERA_BLOCK_PRODUCT

}  // namespace

void add_repack16_panels(KernelTable& t) {
  t.q8_0x16_panel = &panel<BlockQ8_0x16Pair, false>;
  t.q4_0x16_panel = &panel<BlockQ4_0x16, false>;
  t.q4_1x16_panel = &panel<BlockQ4_1x16, true>;
  t.q5_0x16_panel = &panel<BlockQ5_0x16, false>;
  t.q5_1x16_panel = &panel<BlockQ5_1x16, true>;
}

}  // namespace tessera::ggml
