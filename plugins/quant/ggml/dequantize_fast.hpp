// dequantize_fast.hpp: row dequantization for FloatLinear's f32 path, fast.
//
// The formulas of the scalar reference (reference.cpp) in loops the compiler
// vectorizes, compiled once per instruction-set level (dequantize_rows.cpp,
// tessera/isa.hpp). The results are the reference's bits
// (dequantize_test.cpp), only faster: d * q is exact in f32 (an f16
// scale has an 11-bit significand, q at most 8 bits), so d * q + m rounds
// once whether or not the compiler fuses it into one multiply-add. The
// K-quants' d * sc * q is exact as well (at most 23 bits), so
// d * sc * q - dmin * mn also rounds once. With the activations = "f32" mode
// the scalar dequantization took 64% of decode time; with these loops decode
// went from 22 to 51-63 tok/s on the default model. A K-quant row of 1536
// takes 166 ns (Q4_K), 177 (Q5_K) and 238 (Q6_K) against the reference's
// 226, 305 and 1600 (AVX-512 level, one core of the Zen 4 EPYC).
#pragma once

#include <cstdint>

#include "tessera/tensor.hpp"

namespace tessera::ggml {

// Q4_0, Q4_1 and Q8_0 rows of n values (a multiple of 32), Q2_K to Q6_K rows
// (n a multiple of 256) and f16 and bf16 rows (any n); false for any
// other type, which the caller then dequantizes with dequantize_row().
bool dequantize_row_fast(DType type, const void* x, float* y, int64_t n);

}  // namespace tessera::ggml
