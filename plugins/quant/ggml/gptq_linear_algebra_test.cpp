// gptq_linear_algebra.hpp at every instruction-set level against float64
// references (the textbook U: the upper Cholesky factor of an explicit
// inverse), the same bits on any number of threads, and a refusal of what
// is not positive definite.
#include <gtest/gtest.h>
#include <omp.h>

#include <Eigen/Cholesky>
#include <Eigen/LU>

#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "ggml_testing.hpp"
#include "gptq_linear_algebra.hpp"

namespace tessera::ggml {
namespace {

using testing::random_floats;

// A symmetric positive definite [n, n] (column-major, both triangles): XᵀX
// of 2n random rows, in float64.
Eigen::MatrixXd gram_of_random_rows(int64_t n, uint32_t seed) {
  const auto x = random_floats(static_cast<size_t>(2 * n * n), seed);
  const Eigen::Map<const Eigen::MatrixXf> rows(x.data(), 2 * n, n);  // [2n, n]
  const Eigen::MatrixXd r = rows.cast<double>();
  return r.transpose() * r;
}

class FactorLevel : public ::testing::TestWithParam<IsaLevel> {};

// Against U of the textbook route, widths that are not whole 128-column panels.
// float32 against float64 on a matrix of condition ~30: within 1e-3 of U's
// largest entry; below the diagonal exactly 0.
TEST_P(FactorLevel, InverseCholeskyIsTheFloat64Factor) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  for (const int64_t n : {1, 127, 128, 300}) {
    const Eigen::MatrixXd h = gram_of_random_rows(n, 3);
    const double shift = 0.01 * h.diagonal().mean();
    const Eigen::MatrixXf h32 = h.cast<float>();
    // NaN everywhere: every value of U, the zeros below its diagonal too, must be written.
    Eigen::MatrixXf u = Eigen::MatrixXf::Constant(n, n, std::numeric_limits<float>::quiet_NaN());
    ASSERT_EQ(inverse_cholesky_upper(h32.data(), n, static_cast<float>(shift), u.data(), GetParam()),
              FactorOutcome::ok)
        << "n " << n;
    const Eigen::MatrixXd damped = h32.cast<double>() + shift * Eigen::MatrixXd::Identity(n, n);
    const Eigen::MatrixXd want = Eigen::LLT<Eigen::MatrixXd>(damped.inverse()).matrixU();
    const double largest = want.cwiseAbs().maxCoeff();
    EXPECT_LE((u.cast<double>() - want).cwiseAbs().maxCoeff(), 1e-3 * largest) << "n " << n;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = j + 1; i < n; ++i) ASSERT_EQ(u(i, j), 0.0f) << "n " << n << " at " << i << "," << j;
  }
}

TEST_P(FactorLevel, RefusesWhatIsNotPositiveDefinite) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  constexpr int64_t kN = 40;
  Eigen::MatrixXf h = gram_of_random_rows(kN, 4).cast<float>();
  h(7, 7) = -1.0f;  // a negative diagonal: no Cholesky factor
  Eigen::MatrixXf u(kN, kN);
  EXPECT_EQ(inverse_cholesky_upper(h.data(), kN, 0.0f, u.data(), GetParam()), FactorOutcome::not_positive_definite);
  const Eigen::MatrixXf zero = Eigen::MatrixXf::Zero(kN, kN);
  EXPECT_EQ(inverse_cholesky_upper(zero.data(), kN, 0.0f, u.data(), GetParam()), FactorOutcome::not_positive_definite);
  EXPECT_EQ(inverse_cholesky_upper(zero.data(), kN, 1.0f, u.data(), GetParam()), FactorOutcome::ok);
}

// Blocks of larger matrices (leading dimensions above the shapes), an inner
// dimension of 1 (GPTQ's updates within a block) and of 128 (between
// blocks), widths that are not whole panels: float32 sums of k products,
// within 1e-5 of the float64 sum of their magnitudes.
TEST_P(FactorLevel, SubtractProductIsTheFloat64Product) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  for (const auto& [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{37, 1, 1}, {37, 300, 1}, {130, 129, 128},
                                {5, 700, 64}}) {
    const int64_t ldc = m + 3, lda = m + 5, ldb = k + 2;
    auto c = random_floats(static_cast<size_t>(ldc * n), 5);
    const auto a = random_floats(static_cast<size_t>(lda * k), 6);
    const auto b = random_floats(static_cast<size_t>(ldb * n), 7);
    const auto before = c;
    ASSERT_TRUE(subtract_product(c.data(), ldc, a.data(), lda, b.data(), ldb, m, n, k, GetParam()));
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < ldc; ++i) {
        const size_t at = static_cast<size_t>(j * ldc + i);
        if (i >= m) {  // beyond the block: untouched
          ASSERT_EQ(c[at], before[at]);
          continue;
        }
        double want = before[at], magnitude = std::fabs(before[at]);
        for (int64_t l = 0; l < k; ++l) {
          const double p = static_cast<double>(a[static_cast<size_t>(l * lda + i)]) * b[static_cast<size_t>(j * ldb + l)];
          want -= p;
          magnitude += std::fabs(p);
        }
        ASSERT_NEAR(c[at], want, 1e-5 * magnitude) << m << "x" << n << "x" << k << " at " << i << "," << j;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, FactorLevel, ::testing::ValuesIn(testing::all_levels()), testing::level_param_name);

TEST(GptqLinearAlgebra, SameBitsOnOneThreadAndOnFour) {
  constexpr int64_t kN = 300;
  const Eigen::MatrixXf h = gram_of_random_rows(kN, 8).cast<float>();
  Eigen::MatrixXf one(kN, kN), four(kN, kN);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  ASSERT_EQ(inverse_cholesky_upper(h.data(), kN, 1.0f, one.data()), FactorOutcome::ok);
  omp_set_num_threads(4);
  ASSERT_EQ(inverse_cholesky_upper(h.data(), kN, 1.0f, four.data()), FactorOutcome::ok);
  EXPECT_EQ(one, four);

  // Several panels (300 columns), and one panel of a long product (128
  // columns, 512 deep), which one thread computes while the others idle.
  for (const auto& [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{64, kN, 128}, {512, 128, 512}}) {
    const auto a = random_floats(static_cast<size_t>(m * k), 9);
    const auto b = random_floats(static_cast<size_t>(k * n), 10);
    auto c_one = random_floats(static_cast<size_t>(m * n), 11);
    auto c_four = c_one;
    omp_set_num_threads(1);
    ASSERT_TRUE(subtract_product(c_one.data(), m, a.data(), m, b.data(), k, m, n, k));
    omp_set_num_threads(4);
    ASSERT_TRUE(subtract_product(c_four.data(), m, a.data(), m, b.data(), k, m, n, k));
    EXPECT_EQ(c_one, c_four) << m << "x" << n << "x" << k;
  }
  omp_set_num_threads(threads);
}

}  // namespace
}  // namespace tessera::ggml
