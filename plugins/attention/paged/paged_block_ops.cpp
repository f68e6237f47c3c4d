#include "paged_block_ops.hpp"

#include "tessera/fast_exp.hpp"

#include <algorithm>
#include <limits>

#include "paged_block_ops_x86.hpp"
#include "tessera/simd_clones.hpp"

namespace tessera::plugins::paged_attention {
// The clones stay in an anonymous namespace (tessera/simd_clones.hpp).
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

#ifdef TESSERA_PAGED_X86
using namespace x86;
const bool kHasAvx512 = cpu_has_avx512();
const bool kHasAvx2 = cpu_has_avx2();
#endif


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

// One clone set per head_dim case; the generic one serves every other size.
#define TESSERA_PAGED_KERNELS(suffix, dim)                                                                      \
  TESSERA_SIMD_CLONES                                                                                           \
  void group_scores_##suffix(const float* q, int32_t n_q, const float* k, int64_t stride, int32_t head_dim,     \
                             int32_t n, float* s, int32_t ld_s) {                                               \
    group_scores_loop<dim>(q, n_q, k, stride, head_dim, n, s, ld_s);                                            \
  }                                                                                                             \
  TESSERA_SIMD_CLONES                                                                                           \
  void accumulate_##suffix(const float* p, const ValueRun* runs, int32_t n_runs, int64_t stride,                \
                           int32_t head_dim, float correction, float* acc) {                                    \
    accumulate_loop<dim>(p, runs, n_runs, stride, head_dim, correction, acc);                                   \
  }
TESSERA_PAGED_KERNELS(d64, 64)
TESSERA_PAGED_KERNELS(d128, 128)
TESSERA_PAGED_KERNELS(any, 0)
#undef TESSERA_PAGED_KERNELS

}  // namespace


namespace {

// Whether an instruction set's explicit loops serve head_dim on this CPU
// (generic: the portable loops, always).
bool isa_fits(KernelIsa isa, int32_t head_dim) {
  switch (isa) {
    case KernelIsa::generic: return true;
#ifdef TESSERA_PAGED_X86
    case KernelIsa::avx2: return kHasAvx2 && head_dim % 8 == 0;
    case KernelIsa::avx512: return kHasAvx512 && head_dim % 16 == 0;
#endif
    default: (void)head_dim; return false;
  }
}

// The explicit loops dispatch uses for head_dim: AVX-512, else AVX2, else
// none (generic). The one rule for f32 and f16 rows.
KernelIsa explicit_isa(int32_t head_dim) {
  if (isa_fits(KernelIsa::avx512, head_dim)) return KernelIsa::avx512;
  if (isa_fits(KernelIsa::avx2, head_dim)) return KernelIsa::avx2;
  return KernelIsa::generic;
}

// Runs the explicit loop of `isa` (avx2 or avx512, which must fit); false
// for generic. KvT: float or uint16_t (f16 bits), the x86 overloads.
template <typename KvT>
bool explicit_scores(KernelIsa isa, const float* q, int32_t n_q, const KvT* k, int64_t stride, int32_t head_dim,
                     int32_t n, float* s, int32_t ld_s) {
  switch (isa) {
#ifdef TESSERA_PAGED_X86
    case KernelIsa::avx2: group_scores_avx2(q, n_q, k, stride, head_dim, n, s, ld_s); return true;
    case KernelIsa::avx512: group_scores_avx512(q, n_q, k, stride, head_dim, n, s, ld_s); return true;
#endif
    default: (void)q, (void)n_q, (void)k, (void)stride, (void)head_dim, (void)n, (void)s, (void)ld_s; return false;
  }
}

template <typename KvT>
bool explicit_accumulate(KernelIsa isa, const float* p, int64_t ld_p, int32_t n_rows, const float* correction,
                         const ValueRunOf<KvT>* runs, int32_t n_runs, int64_t stride, int32_t head_dim, float* acc) {
  switch (isa) {
#ifdef TESSERA_PAGED_X86
    case KernelIsa::avx2:
      accumulate_group_avx2(p, ld_p, n_rows, correction, runs, n_runs, stride, head_dim, acc);
      return true;
    case KernelIsa::avx512:
      accumulate_group_avx512(p, ld_p, n_rows, correction, runs, n_runs, stride, head_dim, acc);
      return true;
#endif
    default:
      (void)p, (void)ld_p, (void)n_rows, (void)correction, (void)runs, (void)n_runs, (void)stride, (void)head_dim,
          (void)acc;
      return false;
  }
}

}  // namespace

void group_scores(const float* q, int32_t n_q, const float* k, int64_t stride, int32_t head_dim, int32_t n, float* s,
                  int32_t ld_s) {
  if (explicit_scores(explicit_isa(head_dim), q, n_q, k, stride, head_dim, n, s, ld_s)) return;
  switch (head_dim) {
    case 64: return group_scores_d64(q, n_q, k, stride, head_dim, n, s, ld_s);
    case 128: return group_scores_d128(q, n_q, k, stride, head_dim, n, s, ld_s);
    default: return group_scores_any(q, n_q, k, stride, head_dim, n, s, ld_s);
  }
}

bool group_scores_on(KernelIsa isa, const float* q, int32_t n_q, const float* k, int64_t stride, int32_t head_dim,
                     int32_t n, float* s, int32_t ld_s) {
  if (isa == KernelIsa::generic) {
    group_scores_any(q, n_q, k, stride, head_dim, n, s, ld_s);
    return true;
  }
  return isa_fits(isa, head_dim) && explicit_scores(isa, q, n_q, k, stride, head_dim, n, s, ld_s);
}

float softmax_update(float* s, int32_t n, float* m, float* l) {
#ifdef TESSERA_PAGED_X86
  if (kHasAvx512) return softmax_update_avx512(s, n, m, l);
  if (kHasAvx2) return softmax_update_avx2(s, n, m, l);
#endif
  return softmax_update_impl(s, n, m, l);
}

bool softmax_update_on(KernelIsa isa, float* s, int32_t n, float* m, float* l, float* correction) {
  switch (isa) {
    case KernelIsa::generic: *correction = softmax_update_impl(s, n, m, l); return true;
#ifdef TESSERA_PAGED_X86
    case KernelIsa::avx2:
      if (!kHasAvx2) return false;
      *correction = softmax_update_avx2(s, n, m, l);
      return true;
    case KernelIsa::avx512:
      if (!kHasAvx512) return false;
      *correction = softmax_update_avx512(s, n, m, l);
      return true;
#endif
    default: return false;
  }
}

void accumulate_values(const float* p, const ValueRun* runs, int32_t n_runs, int64_t stride, int32_t head_dim,
                       float correction, float* acc) {
  switch (head_dim) {
    case 64: return accumulate_d64(p, runs, n_runs, stride, head_dim, correction, acc);
    case 128: return accumulate_d128(p, runs, n_runs, stride, head_dim, correction, acc);
    default: return accumulate_any(p, runs, n_runs, stride, head_dim, correction, acc);
  }
}

namespace {

void accumulate_rows_one_by_one(const float* p, int64_t ld_p, int32_t n_rows, const float* correction,
                                const ValueRun* runs, int32_t n_runs, int64_t stride, int32_t head_dim, float* acc) {
  for (int32_t g = 0; g < n_rows; ++g) {
    accumulate_values(p + g * ld_p, runs, n_runs, stride, head_dim, correction[g],
                      acc + static_cast<int64_t>(g) * head_dim);
  }
}

}  // namespace

void accumulate_group(const float* p, int64_t ld_p, int32_t n_rows, const float* correction, const ValueRun* runs,
                      int32_t n_runs, int64_t stride, int32_t head_dim, float* acc) {
  if (explicit_accumulate(explicit_isa(head_dim), p, ld_p, n_rows, correction, runs, n_runs, stride, head_dim, acc))
    return;
  accumulate_rows_one_by_one(p, ld_p, n_rows, correction, runs, n_runs, stride, head_dim, acc);
}

bool accumulate_group_on(KernelIsa isa, const float* p, int64_t ld_p, int32_t n_rows, const float* correction,
                         const ValueRun* runs, int32_t n_runs, int64_t stride, int32_t head_dim, float* acc) {
  if (isa == KernelIsa::generic) {
    accumulate_rows_one_by_one(p, ld_p, n_rows, correction, runs, n_runs, stride, head_dim, acc);
    return true;
  }
  return isa_fits(isa, head_dim) &&
         explicit_accumulate(isa, p, ld_p, n_rows, correction, runs, n_runs, stride, head_dim, acc);
}

bool has_f16_loops(int32_t head_dim) { return explicit_isa(head_dim) != KernelIsa::generic; }

void group_scores_f16(const float* q, int32_t n_q, const uint16_t* k, int64_t stride, int32_t head_dim, int32_t n,
                      float* s, int32_t ld_s) {
  explicit_scores(explicit_isa(head_dim), q, n_q, k, stride, head_dim, n, s, ld_s);  // callers check has_f16_loops
}

void accumulate_group_f16(const float* p, int64_t ld_p, int32_t n_rows, const float* correction,
                          const ValueRunF16* runs, int32_t n_runs, int64_t stride, int32_t head_dim, float* acc) {
  explicit_accumulate(explicit_isa(head_dim), p, ld_p, n_rows, correction, runs, n_runs, stride, head_dim,
                      acc);  // callers check has_f16_loops
}

bool group_scores_f16_on(KernelIsa isa, const float* q, int32_t n_q, const uint16_t* k, int64_t stride,
                         int32_t head_dim, int32_t n, float* s, int32_t ld_s) {
  return isa_fits(isa, head_dim) && explicit_scores(isa, q, n_q, k, stride, head_dim, n, s, ld_s);
}

bool accumulate_group_f16_on(KernelIsa isa, const float* p, int64_t ld_p, int32_t n_rows, const float* correction,
                             const ValueRunF16* runs, int32_t n_runs, int64_t stride, int32_t head_dim, float* acc) {
  return isa_fits(isa, head_dim) &&
         explicit_accumulate(isa, p, ld_p, n_rows, correction, runs, n_runs, stride, head_dim, acc);
}

}  // namespace tessera::plugins::paged_attention
