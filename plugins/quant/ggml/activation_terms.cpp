// activation_terms.cpp: the K-quant rows' second activation term of q8x2 and
// the sum of the two terms' products (activation_terms.hpp).
#include "activation_terms.hpp"

namespace tessera::ggml {

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
