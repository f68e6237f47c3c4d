// The inner loops of the paged kernel, over one run of consecutive rows of one
// block (rows of a block are contiguous in the pool; consecutive rows of one
// KV head are `stride` = n_kv_head * head_dim floats apart). Compiled for
// several instruction sets with the driver kept portable: explicit AVX-512
// and AVX2 loops, chosen at run time where the CPU and head_dim allow them,
// and portable ones vectorized through OpenMP SIMD, compiled for every level
// (paged_generic_kernels.cpp, tessera/isa.hpp), for the rest. Nothing here
// needs -ffast-math.
#pragma once

#include <cstdint>

namespace tessera::plugins::paged_attention {

// Scores of n_q query vectors (the heads of one GQA group, pre-scaled) against
// n key rows: s[g * ld_s + t] = q[g] . k[t * stride], q is [n_q][head_dim].
void group_scores(const float* q, int32_t n_q, const float* k, int64_t stride, int32_t head_dim, int32_t n,
                  float* s, int32_t ld_s);

// The instruction set of one of the loops below, for tests: generic (the
// compiler's vectorization; any head_dim), AVX2 (head_dim a multiple of 8) or
// AVX-512 (a multiple of 16).
enum class KernelIsa { generic, avx2, avx512 };

// The same scores computed by one instruction set's loop. Returns false,
// computing nothing, when the CPU or the build lacks that loop or head_dim
// does not fit it.
bool group_scores_on(KernelIsa isa, const float* q, int32_t n_q, const float* k, int64_t stride, int32_t head_dim,
                     int32_t n, float* s, int32_t ld_s);

// One online-softmax step of one query over the n scores of a chunk of keys
// (s is overwritten with the weights exp(s - m')):
//   m' = max(m, max s);  l = l * exp(m - m') + sum exp(s - m')
// Returns exp(m - m'), the factor the query's accumulator must be scaled by.
// m starts at -inf and l at 0.
float softmax_update(float* s, int32_t n, float* m, float* l);

// The same step by one instruction set's loop (generic: the portable one),
// its return value in *correction; false, computing nothing, when the CPU or
// the build lacks that loop.
bool softmax_update_on(KernelIsa isa, float* s, int32_t n, float* m, float* l, float* correction);

// Consecutive key rows of one block (V rows v + t * stride, t < n), f32 or
// f16 (ValueRunF16: the bits of an f16 pool).
template <typename T>
struct ValueRunOf {
  const T* v;
  int32_t n;
};
using ValueRun = ValueRunOf<float>;
using ValueRunF16 = ValueRunOf<uint16_t>;

// acc = acc * correction + sum over the runs of p[t] * v[t * stride], with p
// the weights of all runs back to back. acc is [head_dim].
void accumulate_values(const float* p, const ValueRun* runs, int32_t n_runs, int64_t stride, int32_t head_dim,
                       float correction, float* acc);

// accumulate_values for n_rows queries at once (the heads of one GQA group,
// any number): row g has weights p + g * ld_p, factor correction[g] and
// accumulator acc + g * head_dim, so acc is [n_rows][head_dim]. Where the
// CPU allows, each V row is loaded once for all of them.
void accumulate_group(const float* p, int64_t ld_p, int32_t n_rows, const float* correction, const ValueRun* runs,
                      int32_t n_runs, int64_t stride, int32_t head_dim, float* acc);

// The same accumulation by one instruction set's loop (generic: one row after
// another); false, computing nothing, as for group_scores_on.
bool accumulate_group_on(KernelIsa isa, const float* p, int64_t ld_p, int32_t n_rows, const float* correction,
                         const ValueRun* runs, int32_t n_runs, int64_t stride, int32_t head_dim, float* acc);

// f16 pools read in place: K and V rows are widened in registers by the
// explicit AVX-512 / AVX2 (+F16C) loops, so the kernel reads half the bytes
// and keeps no widened copy. Only where such a loop exists for head_dim
// (has_f16_loops); elsewhere the kernel widens rows into scratch first and
// calls the f32 loops. Same arithmetic as the f32 loops on the widened values.
bool has_f16_loops(int32_t head_dim);
void group_scores_f16(const float* q, int32_t n_q, const uint16_t* k, int64_t stride, int32_t head_dim, int32_t n,
                      float* s, int32_t ld_s);
void accumulate_group_f16(const float* p, int64_t ld_p, int32_t n_rows, const float* correction,
                          const ValueRunF16* runs, int32_t n_runs, int64_t stride, int32_t head_dim, float* acc);
// By one instruction set's loop (avx2 or avx512; generic has none), for
// tests; false, computing nothing, when the CPU, build or head_dim rule it out.
bool group_scores_f16_on(KernelIsa isa, const float* q, int32_t n_q, const uint16_t* k, int64_t stride,
                         int32_t head_dim, int32_t n, float* s, int32_t ld_s);
bool accumulate_group_f16_on(KernelIsa isa, const float* p, int64_t ld_p, int32_t n_rows, const float* correction,
                             const ValueRunF16* runs, int32_t n_runs, int64_t stride, int32_t head_dim, float* acc);

}  // namespace tessera::plugins::paged_attention
