// paged_block_ops_x86.hpp: the explicit AVX-512 and AVX2 loops of the paged
// kernel (paged_block_ops_avx512.cpp, paged_block_ops_avx2.cpp), each file
// compiled for its level alone (tessera/isa.hpp). Call one only where
// best_isa_level() reaches its level; paged_block_ops.cpp does the dispatch.
// TESSERA_PAGED_X86 is 1 where the loops exist (x86-64).
#pragma once

#include <cstdint>

#include "paged_block_ops.hpp"
#include "tessera/isa.hpp"

#define TESSERA_PAGED_X86 TESSERA_ISA_X86
#if TESSERA_PAGED_X86

namespace tessera::plugins::paged_attention::x86 {

// K and V rows are f32, or f16 widened in registers as they are loaded (f16
// pools: half the bytes, and no widened copy in memory). Every loop is a
// template over the element type KvT, float or uint16_t (f16 bits).
//
// Scores a block of 16 keys (8 with AVX2) at a time: one vector of partial
// sums per key, then the block's vectors summed lane-wise by a transpose
// tree into one vector of its scores and one store. Reducing each score on
// its own costs a chain of shuffles and adds per score (most of the loop's
// time at head_dim 64); the tree needs about three instructions per score.
//
// Fused value accumulation: the rows of a group share every V row, so a pass
// holds a slice of kVecs vectors of head_dim for up to kRows rows in registers
// and walks the runs once, loading each V slice once and adding it, times a
// broadcast weight, to every row. Passes: AVX-512 slices of 64 floats for up
// to 6 rows (24 accumulators, 4 V vectors, a weight); AVX2 slices of 16 for
// up to 4 (8 + 2 + 1 of 16 registers). Per row and lane the sum runs over the
// keys in order, as in accumulate_loop.
//
// Online softmax with explicit vectors. GCC keeps the portable loop of
// softmax_update_impl scalar: under its default -ftrapping-math it will not
// turn the clamp inside exp_nonpositive into a vector max, and in a batched
// decode that scalar loop took a third of the kernel's time. The vector
// versions apply the steps of exp_nonpositive, with its constants
// (tessera/fast_exp.hpp), to 16 or 8 lanes at once, with the FMAs GCC forms
// from its scalar code.

// group_scores for head_dim a multiple of 16 (AVX-512) or 8 (AVX2).
void group_scores_avx512(const float* q, int32_t n_q, const float* k, int64_t stride, int32_t head_dim, int32_t n,
                         float* s, int32_t ld_s);
void group_scores_avx2(const float* q, int32_t n_q, const float* k, int64_t stride, int32_t head_dim, int32_t n,
                       float* s, int32_t ld_s);
// The same on f16 K rows, widened in registers.
void group_scores_avx512(const float* q, int32_t n_q, const uint16_t* k, int64_t stride, int32_t head_dim, int32_t n,
                         float* s, int32_t ld_s);
void group_scores_avx2(const float* q, int32_t n_q, const uint16_t* k, int64_t stride, int32_t head_dim, int32_t n,
                       float* s, int32_t ld_s);

// softmax_update, any n >= 1.
float softmax_update_avx512(float* s, int32_t n, float* m, float* l);
float softmax_update_avx2(float* s, int32_t n, float* m, float* l);

// accumulate_group for head_dim a multiple of 16 (AVX-512) or 8 (AVX2).
void accumulate_group_avx512(const float* p, int64_t ld_p, int32_t n_rows, const float* correction,
                             const ValueRun* runs, int32_t n_runs, int64_t stride, int32_t head_dim, float* acc);
void accumulate_group_avx2(const float* p, int64_t ld_p, int32_t n_rows, const float* correction,
                           const ValueRun* runs, int32_t n_runs, int64_t stride, int32_t head_dim, float* acc);
// The same on f16 V rows, widened in registers.
void accumulate_group_avx512(const float* p, int64_t ld_p, int32_t n_rows, const float* correction,
                             const ValueRunF16* runs, int32_t n_runs, int64_t stride, int32_t head_dim, float* acc);
void accumulate_group_avx2(const float* p, int64_t ld_p, int32_t n_rows, const float* correction,
                           const ValueRunF16* runs, int32_t n_runs, int64_t stride, int32_t head_dim, float* acc);

}  // namespace tessera::plugins::paged_attention::x86

#endif
