// The inner loops of the paged kernel, over one run of consecutive rows of one
// block (rows of a block are contiguous in the pool; consecutive rows of one
// KV head are `stride` = n_kv_head * head_dim floats apart). Compiled for
// several instruction sets (TESSERA_SIMD_CLONES in the .cpp) with the driver
// kept portable. Dot products vectorize along head_dim through OpenMP SIMD
// reductions; nothing here needs -ffast-math.
#pragma once

#include <cstdint>

namespace tessera::plugins::paged_attention {

// exp(x) for x <= 0 (every exponent of an online softmax is score - running
// max), within 2e-7 relative of std::exp down to x = -87; smaller x give
// about 1e-38 instead of 0, which is harmless here (it only ever multiplies
// zero state or adds < 1e-38 of weight). Pure arithmetic, so loops over it vectorize.
float exp_nonpositive(float x);

// Scores of n_q query vectors (the heads of one GQA group, pre-scaled) against
// n key rows: s[g * ld_s + t] = q[g] . k[t * stride], q is [n_q][head_dim].
void group_scores(const float* q, int32_t n_q, const float* k, int64_t stride, int32_t head_dim, int32_t n,
                  float* s, int32_t ld_s);

// One online-softmax step of one query over n scores (s is overwritten with
// the weights exp(s - m')):
//   m' = max(m, max s);  l = l * exp(m - m') + sum exp(s - m');
//   acc = acc * exp(m - m') + sum_t exp(s[t] - m') * v[t * stride]
// acc is [head_dim]. m starts at -inf, l and acc at 0.
void softmax_accumulate(float* s, int32_t n, const float* v, int64_t stride, int32_t head_dim, float* m, float* l,
                        float* acc);

}  // namespace tessera::plugins::paged_attention
