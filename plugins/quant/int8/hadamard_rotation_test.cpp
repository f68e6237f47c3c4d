// Tests of the rotation INT8 W8A8 files may store their rows in: its block
// sizes, its matrix (against one written out from the definition in
// hadamard_rotation.hpp), orthogonality, and that it undoes itself.
#include "hadamard_rotation.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

namespace tessera::int8 {
namespace {

std::vector<float> random_row(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(rng);
  return v;
}

TEST(HadamardRotation, BlocksAreTheLargestPowerOfTwoDividingTheRow) {
  EXPECT_EQ(hadamard_block(896), 128);    // Qwen2.5-0.5B's width: 7 x 128
  EXPECT_EQ(hadamard_block(4864), 256);   // its MLP: 19 x 256
  EXPECT_EQ(hadamard_block(576), 64);     // SmolLM2-135M: 9 x 64
  EXPECT_EQ(hadamard_block(1536), 512);
  EXPECT_EQ(hadamard_block(3), 1);
  EXPECT_EQ(hadamard_block(8192), kMaxHadamardBlock);
  EXPECT_EQ(hadamard_block(3 * 8192), kMaxHadamardBlock);
}

// Row k of R is e_k·R; R[k][j] = H_b[k mod b][j mod b] / sqrt(b) within a
// block and 0 outside, H_b[i][j] = (-1)^popcount(i & j) (Sylvester's
// construction). n = 24 has blocks of 8 (the fused first rounds alone), 96
// of 32 (rounds after them), 20 of 4 (no fused rounds), 5 of 1.
TEST(HadamardRotation, IsTheBlockWalshHadamardMatrix) {
  for (const int64_t n : {int64_t{24}, int64_t{96}, int64_t{20}, int64_t{5}}) {
    const int64_t b = hadamard_block(n);
    for (int64_t k = 0; k < n; ++k) {
      std::vector<float> row(static_cast<size_t>(n), 0.0f);
      row[static_cast<size_t>(k)] = 1.0f;
      rotate_row(row.data(), n);
      for (int64_t j = 0; j < n; ++j) {
        double expected = 0;
        if (k / b == j / b) {
          const auto bits = static_cast<uint64_t>((k % b) & (j % b));
          expected = (std::popcount(bits) % 2 ? -1.0 : 1.0) / std::sqrt(static_cast<double>(b));
        }
        EXPECT_NEAR(row[static_cast<size_t>(j)], expected, 1e-6) << "n " << n << ", R[" << k << "][" << j << "]";
      }
    }
  }
}

TEST(HadamardRotation, KeepsLengthsAndProductsAndIsItsOwnInverse) {
  for (const int64_t n : {int64_t{896}, int64_t{4864}, int64_t{576}, int64_t{7}}) {
    const auto x = random_row(n, 1), w = random_row(n, 2);
    auto xr = x, wr = w;
    rotate_row(xr.data(), n);
    rotate_row(wr.data(), n);
    double dot = 0, dot_rotated = 0, norm = 0, norm_rotated = 0;
    for (size_t k = 0; k < x.size(); ++k) {
      dot += static_cast<double>(x[k]) * w[k];
      dot_rotated += static_cast<double>(xr[k]) * wr[k];
      norm += static_cast<double>(x[k]) * x[k];
      norm_rotated += static_cast<double>(xr[k]) * xr[k];
    }
    EXPECT_NEAR(norm_rotated, norm, 1e-5 * norm) << n;
    EXPECT_NEAR(dot_rotated, dot, 1e-4 * std::sqrt(static_cast<double>(n))) << n;
    rotate_row(xr.data(), n);
    for (size_t k = 0; k < x.size(); ++k) EXPECT_NEAR(xr[k], x[k], 1e-5) << n << ", column " << k;
  }
}

// What the rotation is for: one channel 100 times the others is spread over
// its block, so the row's largest value (which sets the per-token scale)
// falls towards the rest's.
TEST(HadamardRotation, SpreadsAnOutlierChannelOverItsBlock) {
  const int64_t n = 896;
  auto x = random_row(n, 3);
  x[100] = 100.0f;
  auto xr = x;
  rotate_row(xr.data(), n);
  float largest = 0;
  for (float v : xr) largest = std::max(largest, std::fabs(v));
  EXPECT_LT(largest, 100.0f / 8) << "a block of 128 should spread it over ~sqrt(128) = 11x";
}

}  // namespace
}  // namespace tessera::int8
