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
