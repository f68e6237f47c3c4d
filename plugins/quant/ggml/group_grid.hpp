// group_grid.hpp: the groups of a GPTQ checkpoint (AutoGPTQ's and GPTQModel's
// layout, which core/src/model/hf_quantized.hpp reads back): per output row
// and group of `size` consecutive input columns, a scale s (an f16 value)
// and an integer zero z, each weight s·(q − z) for a b-bit q in [0, 2^b − 1].
//
// A group is a BlockGrid with d = s, m = −s·z (exact in f32: s has 11
// significant bits, z at most 8), bottom 0, top 2^b − 1 and empty_q = z.
// While quantizing (later layers run on the quantized ones) and once loaded,
// the weights run as ggml blocks of 32 columns that hold every s·(q − z)
// exactly, the blocks the loader repacks the checkpoint into, the smallest
// that does: Q4_0 (d = s, x = q − z + 8) when every z is in [2^b − 8, 8]
// (2 and 3 bits always, 4 bits symmetric), else Q4_1 (d = s, m = −s·z) when
// every offset is an f16, else Q5_0 (x = q − z + 16); Q8_0 for 8 bits,
// symmetric only (z = 128).
//
// Written to a file as GPTQ's packed tensors (checkpoint_format "gptq_v2":
// zeros as they are), every word holding 32/b values low bits first, 3-bit
// values running on across word boundaries (32 values in 3 words):
//   qweight [cols·b/32, rows] int32 (along the input), qzeros [groups,
//   rows·b/32] int32 (along the output), scales [groups, rows] f16.
// Groups are always in column order (act-order only changes the order GPTQ
// quantizes in: "static groups"), so no g_idx is needed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "block_grid.hpp"
#include "tessera/tensor.hpp"

namespace tessera::ggml {

struct GroupShape {
  int bits = 0;            // 2, 3, 4 or 8
  int size = 0;            // input columns per group, a multiple of 32 (a whole row: its width)
  bool symmetric = true;   // z = 2^(b−1)
};

// The grid of one group x[n] as GPTQ's reference quantizer chooses it:
// [min(x, 0), max(x, 0)] (symmetric: ±max |x|) in 2^b − 1 steps, z the
// level nearest 0 (symmetric: 2^(b−1)), s rounded to f16; an all-zero group
// spans [−1, 1] as the reference's does. One departure: an asymmetric 4-bit
// s keeps 7 significant bits, so that every −s·z is an f16 and the group
// loads as Q4_1 rather than Q5_0 (group_grid.cpp).
BlockGrid choose_group_grid(const GroupShape& shape, const float* x, int n);

// The block type that holds every group exactly (see above).
DType group_block_type(const GroupShape& shape, std::span<const BlockGrid> grids);

// One block of 32 columns, all in one group of grid `grid`, q[32] its
// values, as `type` (group_block_type's).
void pack_group_block(DType type, const BlockGrid& grid, const uint8_t* q, void* block);

struct GptqTensors {
  std::vector<int64_t> qweight_shape, qzeros_shape, scales_shape;  // outermost first
  std::vector<std::byte> qweight, qzeros, scales;                  // int32, int32, f16
};

// The packed tensors of rows x cols weights: grids [rows, ceil(cols /
// shape.size)], q [rows, cols]. cols a multiple of 32 and rows·bits a
// multiple of 32 (group_rows_fit).
GptqTensors pack_gptq(const GroupShape& shape, const BlockGrid* grids, const uint8_t* q, int64_t rows, int64_t cols);

// Whether the zeros of `rows` output rows fill whole 32-bit words.
inline bool group_rows_fit(const GroupShape& shape, int64_t rows) { return rows * shape.bits % 32 == 0; }

}  // namespace tessera::ggml
