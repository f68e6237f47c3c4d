#include "transformer_ops.hpp"

#include <cmath>

namespace tessera::transformer {

// Below this many rows the work is a few microseconds: a parallel region would
// cost more than it saves (decode steps stay serial).
constexpr int64_t kParallelRows = 64;

void rms_norm_rows(const float* x, const float* weight, float* out, int64_t n_rows, int64_t dim,
                   float eps) {
#pragma omp parallel for schedule(static) if (n_rows >= kParallelRows)
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = out + r * dim;
    // Accumulate in double: a row of a few thousand squares loses bits in float.
    // (simd: lanes of partial sums; in double the order does not show in the float result.)
    double sum_sq = 0.0;
#pragma omp simd reduction(+ : sum_sq)
    for (int64_t i = 0; i < dim; ++i) sum_sq += static_cast<double>(xr[i]) * xr[i];
    const float inv_rms = static_cast<float>(1.0 / std::sqrt(sum_sq / dim + eps));
#pragma omp simd
    for (int64_t i = 0; i < dim; ++i) yr[i] = xr[i] * inv_rms * weight[i];
  }
}

void swiglu_inplace(float* gate, const float* up, int64_t n) {
// Parallel from a few thousand elements: each costs an expf, so even one
// decode batch (rows x n_ff) is tens of microseconds of serial work otherwise.
#pragma omp parallel for simd schedule(static) if (n >= 4096)
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void add_inplace(float* acc, const float* delta, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) acc[i] += delta[i];
}

}  // namespace tessera::transformer
