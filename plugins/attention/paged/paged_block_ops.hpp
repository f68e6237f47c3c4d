// The inner loops of the paged kernel, over one run of consecutive rows of one
// block (rows of a block are contiguous in the pool; consecutive rows of one
// KV head are `stride` = n_kv_head * head_dim floats apart). Compiled for
// several instruction sets (TESSERA_SIMD_CLONES in the .cpp) with the driver
// kept portable. Dot products vectorize along head_dim through OpenMP SIMD
// reductions; nothing here needs -ffast-math.
#pragma once

#include <cstdint>

namespace tessera::plugins::paged_attention {

// Scores of n_q query vectors (the heads of one GQA group, pre-scaled) against
// n key rows: s[g * ld_s + t] = q[g] . k[t * stride], q is [n_q][head_dim].
void group_scores(const float* q, int32_t n_q, const float* k, int64_t stride, int32_t head_dim, int32_t n,
                  float* s, int32_t ld_s);

// The same scores computed by one instruction set's loop, for tests: generic
// (the compiler's vectorization; any head_dim), AVX2 (head_dim a multiple of 8)
// or AVX-512 (a multiple of 16). Returns false, computing nothing, when the
// CPU or the build lacks that loop or head_dim does not fit it.
enum class ScoresIsa { generic, avx2, avx512 };
bool group_scores_on(ScoresIsa isa, const float* q, int32_t n_q, const float* k, int64_t stride, int32_t head_dim,
                     int32_t n, float* s, int32_t ld_s);

// One online-softmax step of one query over the n scores of a chunk of keys
// (s is overwritten with the weights exp(s - m')):
//   m' = max(m, max s);  l = l * exp(m - m') + sum exp(s - m')
// Returns exp(m - m'), the factor the query's accumulator must be scaled by.
// m starts at -inf and l at 0.
float softmax_update(float* s, int32_t n, float* m, float* l);

// Consecutive key rows of one block (V rows v + t * stride, t < n).
struct ValueRun {
  const float* v;
  int32_t n;
};

// acc = acc * correction + sum over the runs of p[t] * v[t * stride], with p
// the weights of all runs back to back. acc is [head_dim].
void accumulate_values(const float* p, const ValueRun* runs, int32_t n_runs, int64_t stride, int32_t head_dim,
                       float correction, float* acc);

}  // namespace tessera::plugins::paged_attention
