#include "paged_block_ops.hpp"

#include <algorithm>
#include <cstring>

// Runtime dispatch without a global -march: each marked function is compiled
// for AVX-512, Haswell (AVX2 + FMA) and baseline x86-64, one picked when the
// library loads, so the plugin never runs an instruction the CPU lacks.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(TESSERA_NO_SIMD_CLONES)
#define TESSERA_SIMD_CLONES __attribute__((target_clones("avx512f", "arch=haswell", "default")))
#else
#define TESSERA_SIMD_CLONES
#endif

namespace tessera::plugins::paged_attention {
// The clones stay in an anonymous namespace: GCC would give the ifunc resolver
// of an external clone default visibility, and a plugin exports only its entry.
namespace {

// Cephes-style expf: x = n ln2 + r with |r| <= ln2 / 2, exp(r) by a degree-6
// polynomial, 2^n put straight into the exponent bits. x <= 0 lets n be found
// by truncation (round half away from zero for negative values), which
// vectorizes even on baseline SSE2.
inline float exp_core(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;     // ln 2 split so n * kLn2Hi is exact
  constexpr float kLn2Lo = -2.12194440e-4f;
  x = std::max(x, -87.0f);  // keeps 2^n normal; NaN passes through (max returns its first argument)
  const int32_t n = static_cast<int32_t>(x * kLog2e - 0.5f);
  const float fn = static_cast<float>(n);
  const float r = x - fn * kLn2Hi - fn * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e_r = p * r * r + r + 1.0f;
  const int32_t bits = (n + 127) << 23;  // 2^n
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return e_r * scale;
}

TESSERA_SIMD_CLONES
void group_scores_impl(const float* __restrict q, int32_t n_q, const float* __restrict k, int64_t stride,
                       int32_t head_dim, int32_t n, float* __restrict s, int32_t ld_s) {
  for (int32_t t = 0; t < n; ++t) {
    const float* __restrict k_row = k + t * stride;  // [head_dim], shared by the whole group
    for (int32_t g = 0; g < n_q; ++g) {
      const float* __restrict q_row = q + static_cast<int64_t>(g) * head_dim;
      float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
      for (int32_t d = 0; d < head_dim; ++d) dot += q_row[d] * k_row[d];
      s[static_cast<int64_t>(g) * ld_s + t] = dot;
    }
  }
}

TESSERA_SIMD_CLONES
void softmax_accumulate_impl(float* __restrict s, int32_t n, const float* __restrict v, int64_t stride,
                             int32_t head_dim, float* m, float* l, float* __restrict acc) {
  float block_max = s[0];
  for (int32_t t = 1; t < n; ++t) block_max = std::max(block_max, s[t]);
  const float m_new = std::max(*m, block_max);
  const float correction = exp_core(*m - m_new);  // ~0 on the first step, where l and acc are 0 anyway

  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int32_t t = 0; t < n; ++t) {
    s[t] = exp_core(s[t] - m_new);
    sum += s[t];
  }
  *l = *l * correction + sum;
  *m = m_new;

  if (correction != 1.0f) {
    for (int32_t d = 0; d < head_dim; ++d) acc[d] *= correction;
  }
  for (int32_t t = 0; t < n; ++t) {
    const float p = s[t];
    const float* __restrict v_row = v + t * stride;  // [head_dim]
    for (int32_t d = 0; d < head_dim; ++d) acc[d] += p * v_row[d];
  }
}

}  // namespace

float exp_nonpositive(float x) { return exp_core(x); }

void group_scores(const float* q, int32_t n_q, const float* k, int64_t stride, int32_t head_dim, int32_t n, float* s,
                  int32_t ld_s) {
  group_scores_impl(q, n_q, k, stride, head_dim, n, s, ld_s);
}

void softmax_accumulate(float* s, int32_t n, const float* v, int64_t stride, int32_t head_dim, float* m, float* l,
                        float* acc) {
  softmax_accumulate_impl(s, n, v, stride, head_dim, m, l, acc);
}

}  // namespace tessera::plugins::paged_attention
