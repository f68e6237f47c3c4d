// activation_terms.hpp: how many 8-bit terms the quantized-domain products
// write each activation block as.
//
// q8 (one term, llama.cpp's arithmetic): x ~ d q, q = round(x / d), d =
// max|x| / 127 per block. Each element is off by up to d / 2. On a small model
// such as SmolLM2-135M that noise moves the logits by a few tenths after 30
// layers, enough to change greedy choices where the top two are close.
//
// q8x2 (two terms): x ~ d1 q1 + d2 q2, where the second term quantizes what the
// first left out (r = x - d1 q1, |r| <= 0.57 d1 with d1's f16 rounding, so
// d2 is about d1 / 254). Each element is then off by at most 0.6 d2, about
// 1/46000 of max|x|, and greedy decoding follows exact arithmetic
// (docs/transformer.md). The products are the same integer dot products: the
// second term is one more activation row, read against each weight group
// while it is in registers, so decode (which waits on memory) costs about a
// tenth more, and prefill (which waits on the multiply-adds) about twice.
//
// In q8x2 the Q4_1/Q5_1 minimum (m times the block's sum of x) takes no
// activation rounding: the repacked kernels read the exact sum (f32) on the
// first term and 0 on the second; the ggml-layout tiles, which read an f16 s
// per term, get the sum's f16 rounding on the first and the rest on the
// second (together within 2^-22 of the sum).
#pragma once

#include <cstdint>
#include <vector>

#include "blocks.hpp"

namespace tessera::ggml {

enum class ActivationTerms : int { q8 = 1, q8x2 = 2 };

// residual[j] = x[j] - d q[j] over n values (n / 256 Q8_K blocks).
void q8_k_residual(const float* x, const BlockQ8K* q, float* residual, int64_t n);

// y[i * out + r] = terms[2i * width + r - begin] + terms[(2i + 1) * width + r - begin]
// for rows i < n_rows and columns r in [begin, end), width = end - begin: the
// products of the two terms of each activation row, summed.
void add_term_pairs(const float* terms, float* y, int64_t n_rows, int64_t out, int64_t begin, int64_t end);

// Output columns per step with two terms: a multiple of every driver's
// column alignment (16, 8, 4), small enough that the term products of a chunk
// of 64 activation rows (32 KB) are still in L1 when they are summed (256
// columns, 128 KB, made a 512-token prefill 2% slower).
inline constexpr int64_t kTermColumns = 64;

// Output columns [begin, end) of n_rows activation rows, bias included.
// products(n, dst, dst_stride, b, e) writes columns [b, e) of the products of
// n quantized activation rows to dst (row i, column r at dst[i * dst_stride +
// r - b]). With two terms they go a step of columns at a time to a buffer of
// the calling thread and are summed into y: no Linear keeps products of its own.
template <class Products>
void output_columns(int64_t terms, int64_t n_rows, int64_t out, float* y, const std::vector<float>& bias,
                    int64_t begin, int64_t end, Products&& products) {
  if (terms == 2) {
    thread_local std::vector<float> term_products;  // [n_rows, 2, kTermColumns]; grows, never shrinks
    if (term_products.size() < static_cast<size_t>(2 * n_rows * kTermColumns))
      term_products.resize(static_cast<size_t>(2 * n_rows * kTermColumns));
    for (int64_t b = begin; b < end; b += kTermColumns) {
      const int64_t e = end - b < kTermColumns ? end : b + kTermColumns;
      products(2 * n_rows, term_products.data(), e - b, b, e);
      add_term_pairs(term_products.data(), y, n_rows, out, b, e);
    }
  } else {
    products(n_rows, y + begin, out, begin, end);
  }
  if (bias.empty()) return;
  for (int64_t i = 0; i < n_rows; ++i)
    for (int64_t r = begin; r < end; ++r) y[i * out + r] += bias[static_cast<size_t>(r)];
}

}  // namespace tessera::ggml
