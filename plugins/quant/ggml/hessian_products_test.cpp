// add_gram (H += Xᵀ·X) and hessian_quadratic (tr(M·H·Mᵀ)) at every
// instruction-set level against float64 references of the same sums, and the
// same bits on any number of threads.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <vector>

#include "ggml_testing.hpp"
#include "hessian_products.hpp"

namespace tessera::ggml {
namespace {

using testing::random_floats;

class GramLevel : public ::testing::TestWithParam<IsaLevel> {};

// Two calls (the sums accumulate), widths that are not whole 128-column panels.
TEST_P(GramLevel, AddsXTransposeXToTheLowerTriangleAsFloat64Does) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  for (const int64_t cols : {1, 127, 128, 300}) {
    const int64_t rows_a = 37, rows_b = 300;
    const auto a = random_floats(static_cast<size_t>(rows_a * cols), 11);
    const auto b = random_floats(static_cast<size_t>(rows_b * cols), 12, 3.0f);
    std::vector<float> h(static_cast<size_t>(cols * cols), 0.0f);  // [cols, cols] column-major
    ASSERT_TRUE(add_gram(a.data(), rows_a, cols, h.data(), GetParam()));
    ASSERT_TRUE(add_gram(b.data(), rows_b, cols, h.data(), GetParam()));
    for (int64_t j = 0; j < cols; ++j) {
      for (int64_t i = j; i < cols; ++i) {
        double want = 0, magnitude = 0;  // Σ x_i x_j, and Σ |x_i x_j| for the rounding bound
        for (const auto& [x, rows] : {std::pair{&a, rows_a}, std::pair{&b, rows_b}}) {
          for (int64_t r = 0; r < rows; ++r) {
            const double p = static_cast<double>((*x)[r * cols + i]) * (*x)[r * cols + j];
            want += p;
            magnitude += std::fabs(p);
          }
        }
        // f32 sums of 337 products: within a few units of rounding of Σ|x_i x_j| each.
        ASSERT_NEAR(h[j * cols + i], want, 1e-5 * magnitude) << "H[" << i << "," << j << "], " << cols << " columns";
      }
    }
  }
}

// Row counts that are not whole 128-row blocks, widths not whole packets.
TEST_P(GramLevel, QuadraticTraceIsTheFloat64Sum) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {63, 40}, {130, 200}}) {
    const auto m = random_floats(static_cast<size_t>(rows * cols), 31);
    const auto x = random_floats(static_cast<size_t>(3 * cols * cols), 32);
    std::vector<float> h(static_cast<size_t>(cols * cols));  // Xᵀ X of 3·cols rows: symmetric, both triangles
    for (int64_t i = 0; i < cols; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        double sum = 0;
        for (int64_t r = 0; r < 3 * cols; ++r) sum += static_cast<double>(x[r * cols + i]) * x[r * cols + j];
        h[j * cols + i] = static_cast<float>(sum);
      }
    double want = 0, magnitude = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < cols; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          const double term = static_cast<double>(m[r * cols + i]) * h[j * cols + i] * m[r * cols + j];
          want += term;
          magnitude += std::fabs(term);
        }
    const auto got = hessian_quadratic(m.data(), rows, cols, h.data(), GetParam());
    ASSERT_TRUE(got.has_value());
    // f32 products over cols terms, summed in double: within a few units of
    // f32 rounding of Σ|terms|.
    EXPECT_NEAR(*got, want, 1e-5 * magnitude) << rows << "x" << cols;
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, GramLevel, ::testing::ValuesIn(testing::all_levels()), testing::level_param_name);

TEST(Gram, SameBitsOnOneThreadAndOnFour) {
  constexpr int64_t kRows = 130, kCols = 300;
  const auto x = random_floats(static_cast<size_t>(kRows * kCols), 5);
  std::vector<float> one(kCols * kCols, 0.0f), four(kCols * kCols, 0.0f);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  ASSERT_TRUE(add_gram(x.data(), kRows, kCols, one.data()));
  omp_set_num_threads(4);
  ASSERT_TRUE(add_gram(x.data(), kRows, kCols, four.data()));
  omp_set_num_threads(threads);
  EXPECT_EQ(one, four);

  // tr(M·H·Mᵀ) of 130 rows (two blocks) with that H.
  const auto m = random_floats(static_cast<size_t>(kRows * kCols), 6);
  for (int64_t j = 0; j < kCols; ++j)
    for (int64_t i = 0; i < j; ++i) one[j * kCols + i] = one[i * kCols + j];  // both triangles
  omp_set_num_threads(1);
  const auto on_one = hessian_quadratic(m.data(), kRows, kCols, one.data());
  omp_set_num_threads(4);
  const auto on_four = hessian_quadratic(m.data(), kRows, kCols, one.data());
  omp_set_num_threads(threads);
  ASSERT_TRUE(on_one && on_four);
  EXPECT_EQ(*on_one, *on_four);
}

}  // namespace
}  // namespace tessera::ggml
