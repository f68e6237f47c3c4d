// kernels.hpp: the dot-product kernels, one table per instruction-set level
// (tessera/isa.hpp), chosen once at run time.
//
// Each level lives in its own translation unit compiled with that level's
// flags (kernels_avx2.cpp, kernels_avx512.cpp, ...: tessera_isa_sources in
// CMakeLists.txt), so one build runs on any x86-64 and uses the widest
// instructions the CPU has. Only this header (plain declarations),
// tessera/isa.hpp and blocks.hpp are shared with those translation units.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "blocks.hpp"
#include "tessera/isa.hpp"

namespace tessera::ggml {

// The largest tile a quantized tile kernel accepts.
inline constexpr int kMaxTileW = 4;  // weight rows
inline constexpr int kMaxTileX = 4;  // activation rows
// The largest number of activation rows a repacked-group kernel accepts. A
// decode batch of up to 8 sequences then reads each weight group once per step.
inline constexpr int kMaxRepackX = 8;

// Quantized-domain tile: for wi < nw, xi < nx,
//   y[xi * y_stride + wi] = dot(weight row wi, activation row xi)
// where weight row wi starts at w + wi * w_row_bytes (nb blocks of the weight
// format) and activation row xi at x + xi * x_row_blocks (nb Q8_1 blocks).
// Integer products are exact; per-block scales are applied in f32.
using QuantTileFn = void (*)(const void* w, size_t w_row_bytes, int nw, const BlockQ8_1* x,
                             size_t x_row_blocks, int nx, int64_t nb, float* y, size_t y_stride);

// f32-domain dot of one weight row (f32, f16 or bf16 elements) with n floats.
using FloatDotFn = float (*)(const void* w, const float* x, int64_t n);

// The largest tile of FloatTileFn.
inline constexpr int kMaxFloatTileW = 4;  // weight rows
inline constexpr int kMaxFloatTileX = 2;  // activation rows

// f32 rows against f32 rows, n a multiple of 32: for wi < nw <= kMaxFloatTileW
// and xi < nx <= kMaxFloatTileX,
//   y[xi * y_stride + wi] = f32(w + wi * w_stride, x + xi * x_stride, n)
// bit for bit (each pair summed in the lanes and order of this level's f32
// dot); a tile loads each vector of w and x once for all its pairs, so the
// FMA units rather than the loads set the pace.
using FloatTileFn = void (*)(const float* w, size_t w_stride, int nw, const float* x, size_t x_stride, int nx,
                             int64_t n, float* y, size_t y_stride);

// The largest tile of HalfTileFn.
inline constexpr int kMaxHalfTileW = 2;  // weight rows
inline constexpr int kMaxHalfTileX = 4;  // activation rows

// f16 or bf16 rows against f32 rows, n a multiple of 32: for wi < nw <=
// kMaxHalfTileW and xi < nx <= kMaxHalfTileX,
//   y[xi * y_stride + wi] = f16(w + wi * w_stride, x + xi * x_stride, n)
// (or bf16) bit for bit, w_stride counted in 16-bit elements. The weights are
// widened in registers as they are loaded, once per tile: no f32 copy of
// them is written.
using HalfTileFn = void (*)(const uint16_t* w, size_t w_stride, int nw, const float* x, size_t x_stride, int nx,
                            int64_t n, float* y, size_t y_stride);

// Quantize n floats (a multiple of 32) to Q8_1, bit-identical to quantize_row_q8_1.
using QuantizeQ8_1Fn = void (*)(const float* x, BlockQ8_1* y, int64_t n);
// Quantize n floats (a multiple of 256) to Q8_K, bit-identical to quantize_row_q8_k.
using QuantizeQ8KFn = void (*)(const float* x, BlockQ8K* y, int64_t n);

// The d and s of each Q8_1 activation block widened to f32 once per forward
// (quant_linear.cpp), so the repacked kernels broadcast them with plain loads
// instead of converting them again for every weight group; and the integer
// a group kernel starts the block's sum at, for layouts whose kernels
// multiply each weight quant as stored, k above its value (see
// repacked_quant_excess, quant_linear.hpp): q_offset = −k · (sum of the block's 32 quants), so
// the sum comes out exact in i32 with one broadcast per block and row.
struct ActivationScales {
  float d;
  float s;
  int32_t q_offset;
};

// One activation row of n floats (a multiple of 32) as the Q8_1-based
// products read it (QuantLinear): q[0, nb) = quantize_q8_1(x); with terms == 2
// also q[nb, 2nb) = quantize_q8_1 of what the first term left out (r = x - d q,
// rounded once), and the s of block b carries the sum of its 32 x (f32, summed
// in double in a fixed order): its f16 rounding on the first term, what that
// rounding left out on the second (activation_terms.hpp). scales, unless null,
// [terms * nb]: d widened; s with one term quantize_q8_1's f16 s (d times the
// sum of the quants) widened, with two the sum of x on the first term and 0 on
// the second; q_offset = -excess * (sum of the block's quants). Every level
// gives the same bits (activation_row_impl.hpp).
using QuantizeActivationRowFn = void (*)(const float* x, int64_t n, int terms, int32_t excess, BlockQ8_1* q,
                                         ActivationScales* scales);

// Software prefetch for a kernel streaming weights from memory: with each
// block it reads it prefetches the lines `bytes` further on (0: none), up to
// `end`, the end of the weight rows its thread reads in this call (lines past
// it are another thread's or another tensor's). Changes no result;
// prefetch_choice.hpp decides `bytes`.
struct StreamAhead {
  int64_t bytes = 0;
  uintptr_t end = 0;

  // Where to prefetch for a block at p, or 0 for nowhere. An integer, not a
  // pointer: it may lie past the weights' allocation (a prefetch never faults).
  uintptr_t target(const void* p) const {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p) + static_cast<uintptr_t>(bytes);
    return bytes == 0 || a >= end ? 0 : a;
  }
};

// Repacked group of R rows (blocks.hpp: R = 8 for BlockQ4_1x8 and BlockQ8_0x8,
// 16 for the x16 layouts) of nb blocks: for xi < nx <= kMaxRepackX and r < R,
// y[xi * y_stride + r] = dot(row r, activation row xi).
// xs holds the widened scales of x, laid out like x (x_row_blocks per row).
using RepackTileFn = void (*)(const void* group, int64_t nb, const BlockQ8_1* x, const ActivationScales* xs,
                              size_t x_row_blocks, int nx, float* y, size_t y_stride, StreamAhead ahead);

// K-quant tile: as QuantTileFn, for weight rows of nb Q2_K/Q3_K/Q4_K/Q5_K/Q6_K
// super-blocks and activation rows of nb Q8_K blocks (x_row_blocks apart).
// The integer sums per super-block are exact; the block scales are applied
// in f32. nw <= kMaxTileW, nx <= kMaxTileX.
using KQuantTileFn = void (*)(const void* w, size_t w_row_bytes, int nw, const BlockQ8K* x, size_t x_row_blocks,
                              int nx, int64_t nb, float* y, size_t y_stride);

// Repacked K-quant group (BlockQ2Kx8 .. BlockQ6Kx8) of 8 rows of nb
// super-blocks against nx <= kMaxRepackX activation rows of nb Q8_K blocks
// (x_row_blocks apart): y[xi * y_stride + r] = dot(row r, activation row xi).
// Integer sums per super-block are exact; per super-block and row,
//   acc = fma(d * dx, isum, acc), then acc = fma(-(dmin * dx), msum, acc)
// (Q2_K, Q4_K, Q5_K; Q3_K and Q6_K fold their offset into isum) in f32 in
// that order at every level, so all levels give the same bits.
using KQuantGroupFn = void (*)(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx,
                               float* y, size_t y_stride);

inline constexpr int kPanelRows = 16;    // weight rows of a panel
inline constexpr int kPanelTileX = 16;   // its activation rows come in multiples of this
inline constexpr int kPanelStep = 64;    // quants per row of an activation tile (K of one tile product)
inline constexpr int kPanelSteps = kSuperBlock / kPanelStep;  // tile products over a super-block
inline constexpr int kPanelRuns = 8;     // runs of 32 quants in a super-block (Q4_K/Q5_K's scale and min)

// The activations as the panels read them besides their Q8_K blocks, `rows`
// rows (terms of rows) written by panel_quants:
//   quants   [nb, 256 / 64, rows, 64] int8, 64-byte aligned: block b's quants
//            64 s .. 64 s + 63 of row m at ((b * 4 + s) * rows + m) * 64, so a
//            tile of 16 rows is 1 KiB in a row. Read straight from the Q8_K
//            blocks (292 bytes apart, quants from byte 4) each of a tile's 16
//            rows straddled two cache lines, and those loads took half a
//            panel's time.
//   run_sums [nb, rows, 8] int16: the sums of block b's 8 runs of 32 quants
//            (|sum| <= 4096), which Q4_K/Q5_K's minimums multiply: four
//            16-bit pair products per row where the Q8_K blocks' sums per 16
//            took eight.
struct PanelActivations {
  int8_t* quants = nullptr;
  int16_t* run_sums = nullptr;
  size_t rows = 0;

  // Quants 64 s .. 64 s + 63 of block b, row m (and the rows after it: a tile from m).
  int8_t* tile(int64_t b, int s, int64_t m) const {
    return quants + ((static_cast<size_t>(b) * kPanelSteps + s) * rows + static_cast<size_t>(m)) * kPanelStep;
  }
  // The 8 run sums of block b, row m (those of the rows after it follow, kPanelRuns apart).
  int16_t* runs(int64_t b, int64_t m) const {
    return run_sums + (static_cast<size_t>(b) * rows + static_cast<size_t>(m)) * kPanelRuns;
  }
};

// Bytes of PanelActivations for `rows` rows of nb blocks (the run sums after the quants).
inline size_t panel_activation_bytes(int64_t nb, size_t rows) {
  return static_cast<size_t>(nb) * rows * (kSuperBlock + kPanelRuns * sizeof(int16_t));
}
inline PanelActivations panel_activations(void* memory, int64_t nb, size_t rows) {
  auto* bytes = static_cast<uint8_t*>(memory);
  const size_t quant_bytes = static_cast<size_t>(nb) * rows * kSuperBlock;
  return {reinterpret_cast<int8_t*>(bytes), reinterpret_cast<int16_t*>(bytes + quant_bytes), rows};
}

// Activation row `row` (nb Q8_K blocks at x) into a's layout.
inline void panel_quants(const BlockQ8K* x, int64_t nb, int64_t row, const PanelActivations& a) {
  for (int64_t b = 0; b < nb; ++b) {
    for (int s = 0; s < kPanelSteps; ++s) std::memcpy(a.tile(b, s, row), x[b].qs + kPanelStep * s, kPanelStep);
    int16_t* runs = a.runs(b, row);
    for (int j = 0; j < kPanelRuns; ++j) runs[j] = static_cast<int16_t>(x[b].bsums[2 * j] + x[b].bsums[2 * j + 1]);
  }
}

// Repacked K-quant panel (amx level): 16 weight rows, the groups of 8 at
// `groups` and `groups + group_bytes`, against nx activation rows, nx a
// multiple of 16: y[xi * y_stride + r] = dot(row r, activation row xi),
// r < 16, each to the bit what KQuantGroupFn gives for its group.
// The activations twice: x (x_row_blocks apart) for their scales (and
// Q6_K's sums per 16), xa from its first row (xa.rows >= nx) for their quants
// and run sums.
using KQuantPanelFn = void (*)(const void* groups, size_t group_bytes, int64_t nb, const BlockQ8K* x,
                               size_t x_row_blocks, const PanelActivations& xa, int nx, float* y, size_t y_stride);

// The Q8_1 activations as the 16-row block panels read them (amx level;
// QuantLinear), `rows` rows (terms of rows) written by block_tile_quants:
//   quants [nb, rows, 32] int8, 64-byte aligned: block b of row m at
//          (b * rows + m) * 32, so a tile of 16 rows of one block is 512
//          bytes in a row (the Q8_1 blocks are 36 bytes apart: loaded in
//          place, a tile's rows would straddle cache lines, as the K-quant
//          panels' did);
//   d, s   [nb, rows] f32: ActivationScales' d and s, the 16 rows of a tile
//          side by side (read per row and block beside the Q8_1 blocks,
//          each was a cache line of its own).
struct BlockTiles {
  int8_t* quants = nullptr;
  float* d = nullptr;
  float* s = nullptr;
  size_t rows = 0;
  size_t at(int64_t b, int64_t m) const { return static_cast<size_t>(b) * rows + static_cast<size_t>(m); }
  // Block b of row m (and of the rows after it: a tile from m).
  int8_t* tile(int64_t b, int64_t m) const { return quants + at(b, m) * kBlock; }
};
// Bytes of BlockTiles for `rows` rows of nb blocks.
inline size_t block_tile_bytes(int64_t nb, size_t rows) {
  return static_cast<size_t>(nb) * rows * (kBlock + 2 * sizeof(float));
}
inline BlockTiles block_tiles(void* memory, int64_t nb, size_t rows) {
  auto* bytes = static_cast<uint8_t*>(memory);
  const size_t n = static_cast<size_t>(nb) * rows;
  return {reinterpret_cast<int8_t*>(bytes), reinterpret_cast<float*>(bytes + n * kBlock),
          reinterpret_cast<float*>(bytes + n * (kBlock + sizeof(float))), rows};
}
// Activation row `row` (nb Q8_1 blocks at x, their scales at xs) into a's layout.
inline void block_tile_quants(const BlockQ8_1* x, const ActivationScales* xs, int64_t nb, int64_t row,
                              const BlockTiles& a) {
  for (int64_t b = 0; b < nb; ++b) {
    std::memcpy(a.tile(b, row), x[b].qs, kBlock);
    a.d[a.at(b, row)] = xs[b].d;
    a.s[a.at(b, row)] = xs[b].s;
  }
}
// A repacked 16-row group (BlockQ4_0x16, BlockQ4_1x16, BlockQ5_0x16,
// BlockQ5_1x16, BlockQ8_0x16; amx level) against nx activation rows, nx a
// multiple of 16, read from xa's first row (xa.rows >= nx):
// y[xi * y_stride + r] = dot(row r, activation row xi), r < 16, each to the
// bit what the level's RepackTileFn for the layout gives.
using RepackPanelFn = void (*)(const void* group, int64_t nb, const BlockTiles& xa, int nx, float* y,
                               size_t y_stride);
// Two consecutive repacked K-quant groups as one: the 16 rows of the groups
// of 8 at `groups` and `groups + group_bytes` against nx <= kMaxRepackX
// activation rows: y[xi * y_stride + r], r < 16, each to the bit what
// KQuantGroupFn gives for its group. Where a level has them (AVX-512 VNNI,
// kquant_pairs_avx512vnni.cpp), KQuantLinear runs whole pairs through them.
using KQuantPairFn = void (*)(const void* groups, size_t group_bytes, int64_t nb, const BlockQ8K* x,
                              size_t x_row_blocks, int nx, float* y, size_t y_stride);

struct KernelTable {
  IsaLevel level;
  const char* name;
  int preferred_tile_x;  // activation rows per tile for prefill (register budget)
  QuantizeQ8_1Fn quantize_q8_1;
  QuantTileFn q4_0;
  QuantTileFn q4_1;
  QuantTileFn q8_0;
  FloatDotFn f32;
  FloatDotFn f16;
  FloatDotFn bf16;
  RepackTileFn q4_1x8;
  RepackTileFn q8_0x8;
  // The 16-row layouts, where the level has kernels for them (AVX-512 VNNI and
  // the scalar reference), else nullptr. A QuantLinear repacks to these when
  // the table it is built under has them.
  RepackTileFn q4_1x16;
  RepackTileFn q8_0x16;
  // A row of n / 32 Q4_0/Q4_1/Q8_0 blocks dotted with n floats (the quant
  // plugin's activations = "f32", one activation row): bit for bit what
  // dequantize_row_fast into f32 followed by this level's f32 dot gives (the
  // same weights, summed in the same lanes and order), without the row ever
  // being written out.
  FloatDotFn q4_0_f32;
  FloatDotFn q4_1_f32;
  FloatDotFn q8_0_f32;
  FloatTileFn f32_tile;
  // Q5_0 and Q5_1 (the fallback format of llama.cpp's K-quant mixes for rows
  // that are not whole 256-element super-blocks): the ggml layout, no repacking.
  QuantTileFn q5_0;
  QuantTileFn q5_1;
  // Q4_K, Q5_K, Q6_K against Q8_K activations (quantize_row_q8_k, reference.hpp).
  KQuantTileFn q4_k;
  KQuantTileFn q5_k;
  KQuantTileFn q6_k;
  // The 16-row Q5_0/Q5_1 layouts (BlockQ5_0x16, BlockQ5_1x16), where the level
  // has kernels for them (AVX-512 VNNI and the scalar reference), else nullptr.
  // Q5_0 reads ActivationScales::q_offset for its - 16.
  RepackTileFn q5_0x16;
  RepackTileFn q5_1x16;
  // The 8-row Q5_0/Q5_1 layouts (BlockQ5_0x8, BlockQ5_1x8): every level.
  RepackTileFn q5_0x8;
  RepackTileFn q5_1x8;
  // The K-quants' activations (KQuantLinear; two calls per row with two terms).
  QuantizeQ8KFn quantize_q8_k;
  // The repacked K-quant groups (every level; the AVX-512 levels use AVX2's).
  KQuantGroupFn q4_kx8;
  KQuantGroupFn q6_kx8;
  KQuantGroupFn q5_kx8;
  // The K-quant panels for prefill on AMX-INT8 tiles (the amx level), else nullptr.
  KQuantPanelFn q4_k_panel;
  KQuantPanelFn q6_k_panel;
  KQuantPanelFn q5_k_panel;
  // Q2_K and Q3_K against Q8_K activations: the ggml layout (the rows past
  // the last group of 8) and the repacked groups (BlockQ2Kx8, BlockQ3Kx8);
  // every level (the AVX-512 levels use AVX2's).
  KQuantTileFn q2_k;
  KQuantTileFn q3_k;
  KQuantGroupFn q2_kx8;
  KQuantGroupFn q3_kx8;
  // The repacked K-quant groups two at a time (AVX-512 VNNI and amx), else nullptr.
  KQuantPairFn q4_k_pair;
  KQuantPairFn q5_k_pair;
  KQuantPairFn q6_k_pair;
  KQuantPairFn q2_k_pair;
  KQuantPairFn q3_k_pair;
  // f16 / bf16 weight rows against several activation rows (the AVX-512
  // levels), else nullptr: FloatLinear then widens rows into scratch for
  // f32_tile.
  HalfTileFn f16_tile;
  HalfTileFn bf16_tile;
  // Q4_0's repacked layouts: 8 rows (BlockQ4_0x8, every level) and 16
  // (BlockQ4_0x16, AVX-512 VNNI and the scalar reference, else nullptr).
  // They read ActivationScales::q_offset for their - 8.
  RepackTileFn q4_0x8;
  RepackTileFn q4_0x16;
  QuantizeActivationRowFn quantize_activation_row;
  // The 16-row block layouts' panels for prefill on AMX-INT8 tiles (the amx
  // level, repack16_panels_amx.cpp), else nullptr.
  RepackPanelFn q4_0x16_panel;
  RepackPanelFn q4_1x16_panel;
  RepackPanelFn q8_0x16_panel;
  RepackPanelFn q5_0x16_panel;
  RepackPanelFn q5_1x16_panel;
};

// One table per level, defined in that level's translation unit. Calling one
// the CPU cannot run is undefined behaviour: go through kernels_for().
const KernelTable& scalar_kernel_table();
const KernelTable& avx2_kernel_table();
const KernelTable& avx512_kernel_table();
const KernelTable& avx512_vnni_kernel_table();
const KernelTable& amx_kernel_table();  // avx512_vnni's, with the K-quant and block panels
// The amx level's block panels into t (repack16_panels_amx.cpp).
void add_repack16_panels(KernelTable& t);

// The table for `level`, or nullptr when this CPU lacks it.
const KernelTable* kernels_for(IsaLevel level);

// The table in use: best_isa_level()'s (which $TESSERA_ISA caps) unless
// forced. Chosen once, thread-safe.
const KernelTable& active_kernels();

// Internal, for tests and benchmarks: use `level` from now on. Returns false
// (and changes nothing) when the CPU lacks it. Not to be called while kernels run.
bool force_isa_level(IsaLevel level);

}  // namespace tessera::ggml
