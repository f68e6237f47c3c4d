// block_grid.hpp: the values one block of a legacy GGUF format (Q4_0, Q4_1,
// Q5_0, Q5_1, Q8_0: 32 elements, one scale) can hold, for quantizers that
// choose each element's value themselves (RTN, GPTQ).
//
// Every such block stores x = d * q + m for an integer q in [bottom, top],
// with d and m as the block stores them (f16-rounded): Q4_0 m = -8 d, q in
// 0..15; Q4_1 m the stored minimum, q in 0..15; Q5_0 m = -16 d, q in 0..31;
// Q5_1 q in 0..31; Q8_0 m = -128 d, q in 1..255 (the stored int8 plus 128).
// Rounding against the stored d and m (ggml's reference rounds against d
// before f16 rounding) makes the value a quantizer computes the value the
// file holds, which GPTQ's error feedback needs.
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

  // The q whose value is nearest x (ties to even), clamped to the grid.
  int index(float x) const;
  float value(int q) const { return d * static_cast<float>(q) + m; }
};

// Whether `type` is one of the formats above.
bool has_block_grid(DType type);

// The grid ggml's reference quantizer would choose for the block x[32]:
// Q4_0/Q5_0 put the value of largest magnitude at q = 0; Q4_1/Q5_1 span
// [min, max]; Q8_0 puts max |x| at ±127.
BlockGrid choose_block_grid(DType type, const float* x);

// Writes one block of `type` (its bytes, dtype_info(type).block_bytes) from
// the grid and the 32 indices q[j] in [grid.bottom, grid.top].
void pack_block(DType type, const BlockGrid& grid, const int* q, void* block);

}  // namespace tessera::ggml
