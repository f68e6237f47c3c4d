// paged_block_ops.cpp: which loop of the paged kernel runs: the explicit
// AVX-512 or AVX2 loops (paged_block_ops_avx512.cpp, _avx2.cpp) where the CPU
// runs that level and head_dim is a multiple of their width, else the
// portable loops at the best level (paged_generic_kernels.cpp).
#include "paged_block_ops.hpp"

#include "paged_block_ops_x86.hpp"
#include "tessera/isa.hpp"

namespace tessera::plugins::paged_attention {

TESSERA_ISA_DECLARE(void group_scores_generic(const float* q, int32_t n_q, const float* k, int64_t stride,
                                              int32_t head_dim, int32_t n, float* s, int32_t ld_s))
TESSERA_ISA_DECLARE(void accumulate_values_generic(const float* p, const ValueRun* runs, int32_t n_runs,
                                                   int64_t stride, int32_t head_dim, float correction, float* acc))
TESSERA_ISA_DECLARE(float softmax_update_generic(float* s, int32_t n, float* m, float* l))

namespace {

#if TESSERA_PAGED_X86
using namespace x86;
const bool kHasAvx512 = best_isa_level() >= IsaLevel::avx512;
const bool kHasAvx2 = best_isa_level() >= IsaLevel::avx2;
#endif

using ScoresFn = void (*)(const float*, int32_t, const float*, int64_t, int32_t, int32_t, float*, int32_t);
using AccumulateFn = void (*)(const float*, const ValueRun*, int32_t, int64_t, int32_t, float, float*);
using SoftmaxFn = float (*)(float*, int32_t, float*, float*);
const ScoresFn group_scores_generic = isa_select<ScoresFn>(TESSERA_ISA_TABLE(group_scores_generic));
const AccumulateFn accumulate_values_generic = isa_select<AccumulateFn>(TESSERA_ISA_TABLE(accumulate_values_generic));
const SoftmaxFn softmax_update_generic = isa_select<SoftmaxFn>(TESSERA_ISA_TABLE(softmax_update_generic));

}  // namespace

namespace {

// Whether an instruction set's explicit loops serve head_dim on this CPU
// (generic: the portable loops, always).
bool isa_fits(KernelIsa isa, int32_t head_dim) {
  switch (isa) {
    case KernelIsa::generic: return true;
#if TESSERA_PAGED_X86
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
#if TESSERA_PAGED_X86
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
#if TESSERA_PAGED_X86
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
  group_scores_generic(q, n_q, k, stride, head_dim, n, s, ld_s);
}

bool group_scores_on(KernelIsa isa, const float* q, int32_t n_q, const float* k, int64_t stride, int32_t head_dim,
                     int32_t n, float* s, int32_t ld_s) {
  if (isa == KernelIsa::generic) {
    group_scores_generic(q, n_q, k, stride, head_dim, n, s, ld_s);
    return true;
  }
  return isa_fits(isa, head_dim) && explicit_scores(isa, q, n_q, k, stride, head_dim, n, s, ld_s);
}

float softmax_update(float* s, int32_t n, float* m, float* l) {
#if TESSERA_PAGED_X86
  if (kHasAvx512) return softmax_update_avx512(s, n, m, l);
  if (kHasAvx2) return softmax_update_avx2(s, n, m, l);
#endif
  return softmax_update_generic(s, n, m, l);
}

bool softmax_update_on(KernelIsa isa, float* s, int32_t n, float* m, float* l, float* correction) {
  switch (isa) {
    case KernelIsa::generic: *correction = softmax_update_generic(s, n, m, l); return true;
#if TESSERA_PAGED_X86
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
  accumulate_values_generic(p, runs, n_runs, stride, head_dim, correction, acc);
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
