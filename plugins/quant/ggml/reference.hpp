// reference.hpp: plain scalar conversions between f32 and ggml's storage formats.
//
// These are the obviously-correct versions every optimized kernel is tested
// against, and what `tessera quantize` uses to produce Q4_0/Q4_1/Q8_0 weights.
// n is the number of elements and must be a multiple of the format's block size.
#pragma once

#include <cstdint>

#include "blocks.hpp"
#include "tessera/tensor.hpp"

namespace tessera::ggml {

void dequantize_row_q4_0(const BlockQ4_0* x, float* y, int64_t n);
void dequantize_row_q4_1(const BlockQ4_1* x, float* y, int64_t n);
void dequantize_row_q5_0(const BlockQ5_0* x, float* y, int64_t n);
void dequantize_row_q5_1(const BlockQ5_1* x, float* y, int64_t n);
void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t n);
void dequantize_row_q8_1(const BlockQ8_1* x, float* y, int64_t n);
void dequantize_row_q4_k(const BlockQ4K* x, float* y, int64_t n);
void dequantize_row_q5_k(const BlockQ5K* x, float* y, int64_t n);
void dequantize_row_q6_k(const BlockQ6K* x, float* y, int64_t n);
void dequantize_row_q2_k(const BlockQ2K* x, float* y, int64_t n);
void dequantize_row_q3_k(const BlockQ3K* x, float* y, int64_t n);
void dequantize_row_f16(const uint16_t* x, float* y, int64_t n);
void dequantize_row_bf16(const uint16_t* x, float* y, int64_t n);

// Any of the formats above (and f32, a copy). Returns false for a dtype this
// file does not know.
bool dequantize_row(DType type, const void* x, float* y, int64_t n);

// Weights. Q4_0: symmetric around the value of largest magnitude (ggml's
// choice: that value maps exactly to q = 0, i.e. -8 * d). Q4_1: d = (max - min) / 15,
// m = min. Q8_0: d = max|x| / 127. Ties round to nearest even.
void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t n);
void quantize_row_q4_1(const float* x, BlockQ4_1* y, int64_t n);
void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n);
// Q5_0: as Q4_0 with 16 levels each side (the value of largest magnitude maps
// to q = 0, -16 * d). Q5_1: d = (max - min) / 31, m = min. For tests and
// benchmarks: ggml's own quantizer for these formats may pick other scales.
void quantize_row_q5_0(const float* x, BlockQ5_0* y, int64_t n);
void quantize_row_q5_1(const float* x, BlockQ5_1* y, int64_t n);

// Packs 32 values q[j] (0..15) into Q4_0/Q4_1 nibbles qs[16], and 32 values
// (0..31) into a Q5_0/Q5_1 block's qs[16] and qh[4] (layouts: blocks.hpp).
void pack_q4(const int* q, uint8_t* qs);
void pack_q5(const int* q, uint8_t* qs, uint8_t* qh);

// The integer value q of element e (0..255) of a Q4_K/Q5_K/Q6_K super-block
// (unsigned: 0..15, 0..31, 0..63), and the sub-block scale and offset that
// turn it into the stored weight: Q4_K/Q5_K x = d * scale * q - dmin * offset
// (scale, offset of the 32-element sub-block e / 32, 6 bits each); Q6_K
// x = d * scale * (q - 32) (scale: the int8 of the 16-element sub-block
// e / 16; offset 0). What the kernels are checked against, element by element.
struct KQuantElement {
  int q;
  int scale;
  int offset;
};
KQuantElement kquant_element(DType type, const void* block, int e);
// The 6-bit scale and minimum of sub-block j (0..7) of a Q4_K/Q5_K super-block.
void k4_scale_min(int j, const uint8_t* scales, uint8_t* scale, uint8_t* min);
// The inverse of k4_scale_min and k_scales.hpp's unpack_k4_scales: the 8
// scales and minima (0..63 each) into scales[12].
void pack_k4_scales(const uint8_t* scale, const uint8_t* min, uint8_t* scales);

// Q4_K and Q6_K weights, for tests and benchmarks (a simple choice of scales,
// not llama.cpp's search for the best ones). Q4_K: per 32, min = min(x, 0)
// and step = (max - min) / 15; the 8 steps and mins of a super-block become
// 6-bit multiples of d = max step / 63 and dmin = max |min| / 63. Q6_K: per
// 16, step = max|x| / 31, stored as an int8 multiple of d = max step / 127.
// n a multiple of 256.
void quantize_row_q4_k(const float* x, BlockQ4K* y, int64_t n);
void quantize_row_q6_k(const float* x, BlockQ6K* y, int64_t n);

// Activations: as Q8_0, plus s = d * sum(q) (computed from the f16-rounded d).
// The SIMD quantizers in the kernel table produce bit-identical output.
void quantize_row_q8_1(const float* x, BlockQ8_1* y, int64_t n);
// K-quant activations: per 256 values d = max|x| / 127 (f32), q = round(x / d),
// and the sums of q per 16. n a multiple of 256.
void quantize_row_q8_k(const float* x, BlockQ8K* y, int64_t n);
void dequantize_row_q8_k(const BlockQ8K* x, float* y, int64_t n);

}  // namespace tessera::ggml
