// add_gram (H += Xᵀ·X) at every instruction-set level against a float64
// reference of the same sums, and the same bits on any number of threads.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <vector>

#include "ggml_testing.hpp"
#include "gram_update.hpp"

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
}

}  // namespace
}  // namespace tessera::ggml
