#include "tessera/blocks/elementwise.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tessera/blocks/silu.hpp"

namespace tessera::blocks {

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
// Parallel from a few thousand elements (a decode batch of 8 is 12288 here:
// ~13 us on one core even vectorized); a single decode row stays serial.
#pragma omp parallel if (n >= 4096)
  {
    const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    // Thread boundaries on multiples of 16 floats: each part starts on a cache line.
    const int64_t chunks = (n + 15) / 16;
    const int64_t begin = std::min(n, chunks * t / nt * 16), end = std::min(n, chunks * (t + 1) / nt * 16);
    silu_mul(gate + begin, up + begin, end - begin);
  }
}

void add_inplace(float* acc, const float* delta, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) acc[i] += delta[i];
}

void gather_rows(std::span<const int32_t> rows, const float* src, float* dst, int64_t width) {
  for (size_t i = 0; i < rows.size(); ++i)
    std::memcpy(dst + static_cast<int64_t>(i) * width, src + rows[i] * width, static_cast<size_t>(width) * sizeof(float));
}

}  // namespace tessera::blocks
