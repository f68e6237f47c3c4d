// paged_block_ops_x86.hpp: the explicit AVX-512 and AVX2 loops of the paged
// kernel (paged_block_ops_x86.cpp), each compiled for its instruction set
// alone through target attributes (no -m flags on the file). Call one only
// after its cpu_has_* check; paged_block_ops.cpp does the dispatch.
// Defines TESSERA_PAGED_X86 where the loops exist (x86-64 GCC or clang,
// unless TESSERA_NO_SIMD_CLONES asks for the portable code only).
#pragma once

#include <cstdint>

#include "paged_block_ops.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(TESSERA_NO_SIMD_CLONES)
#define TESSERA_PAGED_X86 1

namespace tessera::plugins::paged_attention::x86 {

bool cpu_has_avx512();  // AVX-512 F
bool cpu_has_f16c();
bool cpu_has_avx2();    // AVX2, FMA and F16C

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
