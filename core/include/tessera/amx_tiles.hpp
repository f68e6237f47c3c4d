// tessera/amx_tiles.hpp: the tile set-up plugins' AMX-INT8 kernels share.
// Only for files compiled with the amx level's flags (CMake:
// tessera_isa_sources(amx ...), tessera/isa.hpp), reached only where
// cpu_supports(IsaLevel::amx) said yes (the CPU has the tiles and Linux
// granted them to this process).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace tessera {

// Palette 1's configuration block (64 bytes, as ldtilecfg reads it).
struct alignas(64) TileConfig {
  uint8_t palette_id;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
static_assert(sizeof(TileConfig) == 64);

// GCC 12's tile loads (and ldtilecfg, which names only the first 8 bytes of
// its 64) are asm statements that take only an address, with no memory
// operand or clobber: the compiler may keep the stores of a buffer a tile
// load reads in registers, or drop them. This compiler barrier goes between
// such writes and the tile instructions that read them, and (belt and braces:
// GCC 12's tile stores do clobber memory) after tile stores.
inline void tile_memory_fence() { asm volatile("" ::: "memory"); }

// Tile t (t < 8) rows[t] rows of colsb[t] bytes (0 and 0: unused). Load a
// configuration before a kernel's first tile instruction on each call:
// another plugin's tile code on this thread may have loaded its own since.
inline void configure_tiles(const uint8_t (&rows)[8], const uint16_t (&colsb)[8]) {
  TileConfig c{};
  c.palette_id = 1;
  for (int t = 0; t < 8; ++t) {
    c.rows[t] = rows[t];
    c.colsb[t] = colsb[t];
  }
  tile_memory_fence();  // c is read by ldtilecfg
  _tile_loadconfig(&c);
}

// Tiles 0-7 each 16 rows of 64 bytes: K = 64 per product.
inline void configure_16x64_tiles() {
  configure_tiles({16, 16, 16, 16, 16, 16, 16, 16}, {64, 64, 64, 64, 64, 64, 64, 64});
}

}  // namespace tessera
