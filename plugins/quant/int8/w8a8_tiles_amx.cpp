// w8a8_tiles_amx.cpp: INT8 W8A8 prefill on AMX-INT8 tiles, and the amx
// level's table (avx512_vnni's panel dot with these tiles). Compiled with the
// avx512_vnni flags plus -mamx-tile -mamx-int8.
//
// Per-row weight scales and per-row activation scales leave nothing to apply
// inside the sum, so the whole row length accumulates in the tiles with a
// single readout at the end: tdpbssd over every 64-column chunk of two panels
// (B tiles, already in the layout it reads) and 32 activation rows (A tiles
// loaded with the rows' stride), four i32 sum tiles.
#include <immintrin.h>

#include <cstdint>

#include "tessera/amx_tiles.hpp"
#include "w8a8_kernels.hpp"
#include "w8a8_layout.hpp"

namespace tessera::int8 {
namespace {

// Tiles 0-3: sums (activation block a x panel b at 2a + b); 4, 5: activations
// rows 0-15 and 16-31; 6, 7: the two panels' chunk. All 16 rows x 64 bytes
// (configure_16x64_tiles, loaded at every call; ldtilecfg costs little beside a block).

void panel_tiles_amx(const int8_t* panels, size_t panel_bytes, int64_t k_chunks, const int8_t* x, size_t x_stride,
                     int32_t* acc) {
  configure_16x64_tiles();
  tile_memory_fence();
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  const int8_t* x_hi = x + 16 * x_stride;
  for (int64_t c = 0; c < k_chunks; ++c) {
    _tile_loadd(4, x + c * kChunk, x_stride);
    _tile_loadd(5, x_hi + c * kChunk, x_stride);
    _tile_loadd(6, panels + c * kChunkBytes, 64);
    _tile_loadd(7, panels + panel_bytes + c * kChunkBytes, 64);
    _tile_dpbssd(0, 4, 6);
    _tile_dpbssd(1, 4, 7);
    _tile_dpbssd(2, 5, 6);
    _tile_dpbssd(3, 5, 7);
  }
  constexpr size_t stride = kTileBlockRows * sizeof(int32_t);
  _tile_stored(0, acc, stride);
  _tile_stored(1, acc + 16, stride);
  _tile_stored(2, acc + 16 * kTileBlockRows, stride);
  _tile_stored(3, acc + 16 * kTileBlockRows + 16, stride);
  tile_memory_fence();
  // Hand the tile state back: a thread holding it makes every context switch
  // save and restore 8 KiB.
  _tile_release();
}

}  // namespace

const KernelTable& amx_kernels() {
  static const KernelTable table = [] {
    KernelTable t = avx512_vnni_kernels();
    t.level = IsaLevel::amx;
    t.name = "amx";
    t.panel_tiles = &panel_tiles_amx;
    return t;
  }();
  return table;
}

}  // namespace tessera::int8
