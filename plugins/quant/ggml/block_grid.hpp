// block_grid.hpp: the values a group of 32 weights of a GGUF block format
// can hold, for quantizers that choose each element's value themselves (RTN,
// GPTQ, AWQ): the legacy formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0: a block of
// 32, one scale) and the K formats whose sub-blocks are 32 wide (Q4_K, Q5_K:
// a super-block of 256 = 8 sub-blocks), and Q3_K and Q6_K (a super-block of
// 256 = 16 sub-blocks of 16).
//
// Every group stores x = d * q + m for an integer q in [bottom, top], with d
// and m as the file holds them (f16-rounded): Q4_0 m = -8 d, q in 0..15; Q4_1
// m the stored minimum, q in 0..15; Q5_0 m = -16 d, q in 0..31; Q5_1 q in
// 0..31; Q8_0 m = -128 d, q in 1..255 (the stored int8 plus 128); Q4_K/Q5_K
// d = D * scale and m = -(Dmin * min) with the super-block's f16 D and Dmin
// and the sub-block's 6-bit scale and min, q in 0..15 / 0..31; Q6_K d = D *
// scale with the super-block's f16 D and the sub-block's int8 scale, m =
// -32 d, q in 0..63; Q3_K likewise with a 6-bit scale in -32..31, m = -4 d,
// q in 0..7. Rounding
// against the stored d and m (ggml's reference rounds against d before f16
// rounding) makes the value a quantizer computes the value the file holds,
// which GPTQ's error feedback needs.
//
// A K format's groups are chosen together: D and Dmin are the largest of the
// super-block's 8 steps and minima over 63 (Q6_K: D the largest of its 16
// steps over 127; Q3_K over 31), so the grids of a span of grid_span(type) =
// 256 columns come from one call. A group is grid_width(type) columns: 32,
// or 16 for Q3_K and Q6_K.
#pragma once

#include <cstdint>

#include "tessera/tensor.hpp"

namespace tessera::ggml {

struct BlockGrid {
  float d = 0.0f;
  float m = 0.0f;
  int bottom = 0;
  int top = 0;
  int empty_q = 0;  // the q stored when d is 0 (every q then means m)
  // Q4_K/Q5_K only: the super-block's D and Dmin and this sub-block's 6-bit
  // scale and min, which make d and m and are what the file stores.
  float super_d = 0.0f;
  float super_dmin = 0.0f;
  uint8_t k_scale = 0;
  uint8_t k_min = 0;
  // Q6_K and Q3_K: the super-block's D (super_d) times this sub-block's
  // scale is d; the sign is the one that puts the sub-block's value of
  // largest magnitude at the grid's most negative level (q - 32 = -32,
  // q - 4 = -4), as Q4_0 and Q5_0 do.
  int8_t signed_scale = 0;

  // The q whose value is nearest x (ties to even), clamped to the grid.
  int index(float x) const;
  float value(int q) const { return d * static_cast<float>(q) + m; }
};

// Whether `type` is one of the formats above.
bool has_block_grid(DType type);

// The columns whose grids are chosen together and stored as one block: 32,
// or 256 for the K formats.
int grid_span(DType type);

// The columns of one grid (one scale): 32, or 16 for Q3_K and Q6_K.
int grid_width(DType type);

// The grids for x[grid_span(type)], one per grid_width(type) columns.
// Legacy formats as ggml's reference quantizer chooses them: Q4_0/Q5_0 put
// the value of largest magnitude at q = 0; Q4_1/Q5_1 span [min, max]; Q8_0
// puts max |x| at ±127. Q4_K/Q5_K: per 32, min(x, 0) to max(x) in 15 / 31
// steps, then the 8 steps and minima as 6-bit multiples of D = max step / 63
// and Dmin = max |minimum| / 63 (reference.hpp's quantize_row_q4_k rule; not
// llama.cpp's search, which GPTQ and AWQ's clipping stand in for). Q6_K:
// per 16, the value of largest magnitude at q - 32 = -32 (step = that value
// / -32), the 16 steps as int8 multiples of D = max |step| / 127; Q3_K the
// same with -4 and 6-bit multiples of D = max |step| / 31.
void choose_grids(DType type, const float* x, BlockGrid* grids);

// Writes one block (a K format: one super-block) of `type`,
// dtype_info(type).block_bytes, from its grids and its grid_span(type)
// indices q[j] in [grid.bottom, grid.top].
void pack_span(DType type, const BlockGrid* grids, const int* q, void* block);

}  // namespace tessera::ggml
