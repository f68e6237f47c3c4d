// gptq_linear_algebra_rows.cpp: the kernels of gptq_linear_algebra.hpp,
// compiled once per instruction-set level (tessera_isa_variants in
// CMakeLists.txt).
#include <algorithm>
#include <cmath>
#include <cstdint>

// Eigen's own kernels, never OpenBLAS's (gptq_linear_algebra.hpp says why).
#undef EIGEN_USE_BLAS
// A namespace of this file's and this level's own for Eigen's templates, so
// that the linker cannot merge them with another level's copies
// (hessian_products_rows.cpp says more), nor with that file's copies at this
// level, which are compiled without EIGEN_DONT_PARALLELIZE.
#define TESSERA_EIGEN_NAME_(level) Eigen_gptq_##level
#define TESSERA_EIGEN_NAME(level) TESSERA_EIGEN_NAME_(level)
#define Eigen TESSERA_EIGEN_NAME(TESSERA_ISA_NAMESPACE)
// The products split their work into panels on the OpenMP threads here
// (column_panels.hpp), and the factorization runs outside them: Eigen's own
// threading would choose its blocking by the number of threads, and the bits
// with it.
#define EIGEN_DONT_PARALLELIZE
#include <Eigen/Cholesky>
#include <Eigen/Core>

#include "column_panels.hpp"
#include "gptq_linear_algebra.hpp"

namespace tessera::ggml::TESSERA_ISA_NAMESPACE {

FactorOutcome inverse_cholesky_upper_kernel(const float* h, int64_t n, float shift, float* u) {
  using Strided = Eigen::OuterStride<>;
  try {
    Eigen::MatrixXf reversed = Eigen::Map<const Eigen::MatrixXf>(h, n, n).reverse();  // P·H·P
    reversed.diagonal().array() += shift;
    Eigen::LLT<Eigen::Ref<Eigen::MatrixXf>> factor(reversed);  // in place: L in the lower triangle
    if (factor.info() != Eigen::Success) return FactorOutcome::not_positive_definite;
    // L⁻¹, one panel of columns at a time: column j of L⁻¹ is zero above row
    // j, so panel [p, p + w) solves L[p:, p:]·X = the identity's rows p.. of
    // those columns. Panels near the left are longer, and go first.
    Eigen::Map<Eigen::MatrixXf> inverse_l(u, n, n);
    inverse_l.setZero();
    const bool solved = for_each_column_panel(n, 128, [&](int64_t p, int64_t w) {
      Eigen::Map<Eigen::MatrixXf, 0, Strided> panel(u + p * n + p, n - p, w, Strided(n));
      panel.topRows(w).setIdentity();
      reversed.bottomRightCorner(n - p, n - p).triangularView<Eigen::Lower>().solveInPlace(panel);
    });
    if (!solved) return FactorOutcome::out_of_memory;
    inverse_l.reverseInPlace();  // L⁻¹'s zeros above its diagonal land below U's
    if (!inverse_l.diagonal().allFinite() || (inverse_l.diagonal().array() <= 0.0f).any())
      return FactorOutcome::not_positive_definite;
    return FactorOutcome::ok;
  } catch (...) {
    return FactorOutcome::out_of_memory;
  }
}

bool subtract_product_kernel(float* c, int64_t ldc, const float* a, int64_t lda, const float* b, int64_t ldb, int64_t m,
                             int64_t n, int64_t k) {
  using Strided = Eigen::OuterStride<>;
  Eigen::Map<Eigen::MatrixXf, 0, Strided> result(c, m, n, Strided(ldc));        // [m, n]
  const Eigen::Map<const Eigen::MatrixXf, 0, Strided> left(a, m, k, Strided(lda));   // [m, k]
  const Eigen::Map<const Eigen::MatrixXf, 0, Strided> right(b, k, n, Strided(ldb));  // [k, n]
  // Panels of the result's columns, one product each, on the threads.
  return for_each_column_panel(
      n, 128, [&](int64_t p, int64_t w) { result.middleCols(p, w).noalias() -= left * right.middleCols(p, w); });
}

}  // namespace tessera::ggml::TESSERA_ISA_NAMESPACE
