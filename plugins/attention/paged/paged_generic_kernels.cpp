// paged_generic_kernels.cpp: the portable loops of the paged kernel, for
// any head_dim, compiled once per instruction-set level
// (tessera_isa_variants in CMakeLists.txt): the compiler vectorizes them for
// each. paged_block_ops.cpp uses them where no explicit loop fits.
#include <algorithm>
#include <limits>

#include "paged_block_ops.hpp"
#include "tessera/fast_exp.hpp"

namespace tessera::plugins::paged_attention::TESSERA_ISA_NAMESPACE {

namespace {

// The loops, for a head_dim fixed at compile time (kDim > 0: the usual 64 and
// 128, where the accumulator of a query stays in registers across a whole run
// and the dot products unroll completely) or given at run time (kDim == 0).
template <int32_t kDim>
[[gnu::always_inline]] inline void group_scores_loop(const float* __restrict q, int32_t n_q,
                                                     const float* __restrict k, int64_t stride,
                                                     int32_t head_dim, int32_t n, float* __restrict s,
                                                     int32_t ld_s) {
  const int32_t D = kDim > 0 ? kDim : head_dim;
  for (int32_t t = 0; t < n; ++t) {
    const float* __restrict k_row = k + t * stride;  // [head_dim], shared by the whole group
    for (int32_t g = 0; g < n_q; ++g) {
      const float* __restrict q_row = q + static_cast<int64_t>(g) * D;
      float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
      for (int32_t d = 0; d < D; ++d) dot += q_row[d] * k_row[d];
      s[static_cast<int64_t>(g) * ld_s + t] = dot;
    }
  }
}

template <int32_t kDim>
[[gnu::always_inline]] inline void accumulate_loop(const float* __restrict p, const ValueRun* runs, int32_t n_runs,
                                                   int64_t stride, int32_t head_dim, float correction,
                                                   float* __restrict acc_out) {
  const int32_t D = kDim > 0 ? kDim : head_dim;
  if constexpr (kDim > 0) {
    // A local copy the compiler keeps in registers across every run.
    float acc[kDim];
#pragma omp simd
    for (int32_t d = 0; d < kDim; ++d) acc[d] = acc_out[d] * correction;
    for (int32_t r = 0; r < n_runs; ++r) {
      const float* __restrict v = runs[r].v;
      for (int32_t t = 0; t < runs[r].n; ++t, ++p) {
        const float w = *p;
        const float* __restrict v_row = v + t * stride;  // [head_dim]
#pragma omp simd
        for (int32_t d = 0; d < kDim; ++d) acc[d] += w * v_row[d];
      }
    }
#pragma omp simd
    for (int32_t d = 0; d < kDim; ++d) acc_out[d] = acc[d];
  } else {
    if (correction != 1.0f) {
      for (int32_t d = 0; d < D; ++d) acc_out[d] *= correction;
    }
    for (int32_t r = 0; r < n_runs; ++r) {
      const float* __restrict v = runs[r].v;
      for (int32_t t = 0; t < runs[r].n; ++t, ++p) {
        const float w = *p;
        const float* __restrict v_row = v + t * stride;  // [head_dim]
        for (int32_t d = 0; d < D; ++d) acc_out[d] += w * v_row[d];
      }
    }
  }
}

// The portable step, for CPUs without AVX2 (GCC leaves it scalar, see
// softmax_update_avx512).
float softmax_update_impl(float* __restrict s, int32_t n, float* m, float* l) {
  float chunk_max = s[0];
#pragma omp simd reduction(max : chunk_max)
  for (int32_t t = 1; t < n; ++t) chunk_max = std::max(chunk_max, s[t]);
  const float m_new = std::max(*m, chunk_max);
  const float correction = exp_nonpositive(*m - m_new);  // ~0 on the first step, where l and acc are 0 anyway
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int32_t t = 0; t < n; ++t) {
    s[t] = exp_nonpositive(s[t] - m_new);
    sum += s[t];
  }
  *l = *l * correction + sum;
  *m = m_new;
  return correction;
}

}  // namespace

void group_scores_generic(const float* q, int32_t n_q, const float* k, int64_t stride, int32_t head_dim, int32_t n,
                          float* s, int32_t ld_s) {
  switch (head_dim) {
    case 64: return group_scores_loop<64>(q, n_q, k, stride, head_dim, n, s, ld_s);
    case 128: return group_scores_loop<128>(q, n_q, k, stride, head_dim, n, s, ld_s);
    default: return group_scores_loop<0>(q, n_q, k, stride, head_dim, n, s, ld_s);
  }
}

void accumulate_values_generic(const float* p, const ValueRun* runs, int32_t n_runs, int64_t stride, int32_t head_dim,
                               float correction, float* acc) {
  switch (head_dim) {
    case 64: return accumulate_loop<64>(p, runs, n_runs, stride, head_dim, correction, acc);
    case 128: return accumulate_loop<128>(p, runs, n_runs, stride, head_dim, correction, acc);
    default: return accumulate_loop<0>(p, runs, n_runs, stride, head_dim, correction, acc);
  }
}

float softmax_update_generic(float* s, int32_t n, float* m, float* l) { return softmax_update_impl(s, n, m, l); }

}  // namespace tessera::plugins::paged_attention::TESSERA_ISA_NAMESPACE
