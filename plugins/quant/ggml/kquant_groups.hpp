// kquant_groups.hpp: the repacked K-quant group kernels (KQuantGroupFn,
// kernels.hpp; Q2_K to Q6_K) of each level, for the levels' tables. The
// scalar ones (kquant_groups_scalar.cpp) are the reference; AVX2's
// (kquant_groups_avx2.cpp) serve the avx512 level too, and AVX-512 VNNI's
// (kquant_groups_avx512vnni.cpp, Q4_K to Q6_K) the avx512_vnni and amx
// levels, which run AVX2's for Q2_K and Q3_K. Their pair kernels
// (KQuantPairFn) are declared at the end.
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
void q2_kx8_scalar(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                   size_t y_stride);
void q3_kx8_scalar(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                   size_t y_stride);
void q2_kx8_avx2(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                 size_t y_stride);
void q3_kx8_avx2(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                 size_t y_stride);
void q4_kx8_avx2(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                 size_t y_stride);
void q5_kx8_avx2(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                 size_t y_stride);
void q6_kx8_avx2(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                 size_t y_stride);

void q4_kx8_avx512_vnni(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                        size_t y_stride);
void q5_kx8_avx512_vnni(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                        size_t y_stride);
void q6_kx8_avx512_vnni(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                        size_t y_stride);
void q2_kx8_avx512_vnni(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                        size_t y_stride);
void q3_kx8_avx512_vnni(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                        size_t y_stride);

// kquant_pairs_avx512vnni.cpp: two groups at a time (KQuantPairFn).
void q4_k_pair_avx512_vnni(const void* groups, size_t group_bytes, int64_t nb, const BlockQ8K* x, size_t x_row_blocks,
                           int nx, float* y, size_t y_stride);
void q5_k_pair_avx512_vnni(const void* groups, size_t group_bytes, int64_t nb, const BlockQ8K* x, size_t x_row_blocks,
                           int nx, float* y, size_t y_stride);
void q6_k_pair_avx512_vnni(const void* groups, size_t group_bytes, int64_t nb, const BlockQ8K* x, size_t x_row_blocks,
                           int nx, float* y, size_t y_stride);
void q2_k_pair_avx512_vnni(const void* groups, size_t group_bytes, int64_t nb, const BlockQ8K* x, size_t x_row_blocks,
                           int nx, float* y, size_t y_stride);
void q3_k_pair_avx512_vnni(const void* groups, size_t group_bytes, int64_t nb, const BlockQ8K* x, size_t x_row_blocks,
                           int nx, float* y, size_t y_stride);

}  // namespace tessera::ggml
