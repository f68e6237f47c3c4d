// activation_terms.cpp: the second activation term of q8x2 and the sum of the
// two terms' products (activation_terms.hpp).
#include "activation_terms.hpp"

#include "tessera/half.hpp"

namespace tessera::ggml {

void q8_1_residual(const float* x, const BlockQ8_1* q, float* residual, float* block_sums, int64_t n) {
  for (int64_t b = 0; b < n / kBlock; ++b) {
    const float d = f16_to_f32(q[b].d);
    const float* xb = x + b * kBlock;
    float* rb = residual + b * kBlock;
    // d * q is exact in f32 (an 11-bit d times a 7-bit q), so r is x's own
    // rounding left out, rounded once.
#pragma omp simd
    for (int j = 0; j < kBlock; ++j) rb[j] = xb[j] - d * static_cast<float>(q[b].qs[j]);
    double sum = 0.0;  // 32 floats summed in double: the f32 result is the exact sum rounded once
#pragma omp simd reduction(+ : sum)
    for (int j = 0; j < kBlock; ++j) sum += static_cast<double>(xb[j]);
    block_sums[b] = static_cast<float>(sum);
  }
}

void q8_k_residual(const float* x, const BlockQ8K* q, float* residual, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    const float d = q[b].d;
    const float* xb = x + b * kSuperBlock;
    float* rb = residual + b * kSuperBlock;
#pragma omp simd
    for (int j = 0; j < kSuperBlock; ++j) rb[j] = xb[j] - d * static_cast<float>(q[b].qs[j]);
  }
}

void add_term_pairs(const float* terms, float* y, int64_t n_rows, int64_t out, int64_t begin, int64_t end) {
  const int64_t width = end - begin;
  for (int64_t i = 0; i < n_rows; ++i) {
    const float* first = terms + 2 * i * width;
    const float* second = first + width;
    float* yi = y + i * out + begin;
#pragma omp simd
    for (int64_t c = 0; c < width; ++c) yi[c] = first[c] + second[c];
  }
}

}  // namespace tessera::ggml
