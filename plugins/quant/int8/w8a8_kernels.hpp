// w8a8_kernels.hpp: the integer products of INT8 W8A8, one table per
// instruction-set level (tessera/isa.hpp), chosen once at run time.
//
// Every kernel returns exact i32 sums of int8 x int8 products, so every
// level gives the scalar level's integers and the f32 epilogue (w8a8_linear.cpp,
// one copy) gives the same bits everywhere. Each level lives in its own
// translation unit with that level's flags (tessera_isa_sources).
#pragma once

#include <cstddef>
#include <cstdint>

#include "tessera/isa.hpp"

namespace tessera::int8 {

// Activation rows a PanelDotFn takes at once.
inline constexpr int kMaxDotRows = 4;

// One panel (w8a8_layout.hpp: 16 weight rows, k_chunks chunks) against
// nx <= kMaxDotRows activation rows of k_chunks * 64 int8 values each, row xi
// at x + xi * x_stride:
//   acc[xi * 16 + r] = sum over k of W[r][k] * x[xi][k]
// row_sums[r] = sum over k of W[r][k] (a level that reads the activations as
// unsigned bytes takes their offset of 128 back out with it).
using PanelDotFn = void (*)(const int8_t* panel, const int32_t* row_sums, int64_t k_chunks, const int8_t* x,
                            size_t x_stride, int nx, int32_t* acc);

// Activation rows and weight rows of one AMX block.
inline constexpr int kTileBlockRows = 32;
// The amx level: two panels (at panels and panels + panel_bytes) against
// kTileBlockRows activation rows (x + xi * x_stride):
//   acc[xi * 32 + r] for xi < 32, r < 32 (r >= 16: the second panel)
using PanelTilesFn = void (*)(const int8_t* panels, size_t panel_bytes, int64_t k_chunks, const int8_t* x,
                              size_t x_stride, int32_t* acc);

struct KernelTable {
  IsaLevel level;
  const char* name;
  PanelDotFn panel_dot;
  PanelTilesFn panel_tiles;  // the amx level's only, else nullptr
};

const KernelTable& scalar_kernels();
const KernelTable& avx2_kernels();
const KernelTable& avx512_vnni_kernels();
const KernelTable& amx_kernels();

// The table for `level` (a level without its own kernels takes the next
// narrower one's: avx512 runs avx2's), or nullptr when this CPU lacks it.
const KernelTable* kernels_for(IsaLevel level);
// best_isa_level()'s table unless a test forced one.
const KernelTable& active_kernels();
// Tests: use `level` from now on; false (nothing changed) when the CPU lacks it.
bool force_isa_level(IsaLevel level);

}  // namespace tessera::int8
