// kquant_groups.hpp: the repacked K-quant group kernels (KQuantGroupFn,
// kernels.hpp) of each level, for the levels' tables. The scalar ones
// (kquant_groups_scalar.cpp) are the reference; AVX2's
// (kquant_groups_avx2.cpp) serve the AVX-512 levels too.
#pragma once

#include <cstddef>
#include <cstdint>

#include "blocks.hpp"

namespace tessera::ggml {

void q4_kx8_scalar(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                   size_t y_stride);
void q5_kx8_scalar(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                   size_t y_stride);
void q6_kx8_scalar(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                   size_t y_stride);
void q4_kx8_avx2(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                 size_t y_stride);
void q5_kx8_avx2(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                 size_t y_stride);
void q6_kx8_avx2(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                 size_t y_stride);

}  // namespace tessera::ggml
