// hessian_products_rows.cpp: the products of hessian_products.hpp, compiled once
// per instruction-set level (tessera_isa_variants in CMakeLists.txt).
#include <algorithm>
#include <cstdint>

// These products are Eigen's own, never OpenBLAS's (hessian_products.hpp says why).
#undef EIGEN_USE_BLAS
// Eigen's templates, instantiated here with this level's instructions, must
// not merge with another translation unit's copies of the same names (the
// linker keeps one copy of an inline function: an AVX-512 copy would then
// serve callers on any CPU), so this level's Eigen gets a namespace of its own.
#define TESSERA_EIGEN_NAME_(level) Eigen_##level
#define TESSERA_EIGEN_NAME(level) TESSERA_EIGEN_NAME_(level)
#define Eigen TESSERA_EIGEN_NAME(TESSERA_ISA_NAMESPACE)
#include <Eigen/Core>

#include "column_panels.hpp"

namespace tessera::ggml::TESSERA_ISA_NAMESPACE {

bool add_gram_kernel(const float* x, int64_t rows, int64_t cols, float* h) {
  using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const RowMajor> inputs(x, rows, cols);  // [rows, cols]
  Eigen::Map<Eigen::MatrixXf> gram(h, cols, cols);           // [cols, cols], column-major
  // Column panels of H: panel [p, p + w) takes rows p.. of its columns, the
  // lower triangle and its own w×w diagonal block. Panels near the left are
  // longer, and go first.
  return for_each_column_panel(cols, 128, [&](int64_t p, int64_t w) {
    gram.block(p, p, cols - p, w).noalias() += inputs.middleCols(p, cols - p).transpose() * inputs.middleCols(p, w);
  });
}

bool hessian_quadratic_kernel(const float* m, int64_t rows, int64_t cols, const float* h, double* trace) {
  using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const RowMajor> weights(m, rows, cols);  // [rows, cols]
  const Eigen::Map<const Eigen::MatrixXf> gram(h, cols, cols);  // [cols, cols], symmetric
  // Blocks of rows on the threads; each block's sum in its own slot, added
  // in block order at the end, so the threads' order cannot change the bits.
  constexpr int64_t kRows = 128;
  const int64_t blocks = (rows + kRows - 1) / kRows;
  Eigen::VectorXd partial;
  try {
    partial.resize(blocks);
  } catch (...) {
    return false;
  }
  bool ok = true;
#pragma omp parallel for schedule(dynamic, 1) reduction(&& : ok)
  for (int64_t i = 0; i < blocks; ++i) {
    const int64_t r = i * kRows;
    const int64_t n = std::min(kRows, rows - r);
    try {
      const RowMajor product = weights.middleRows(r, n) * gram;  // [n, cols]
      partial[i] = product.cwiseProduct(weights.middleRows(r, n)).cast<double>().sum();
    } catch (...) {
      ok = false;
    }
  }
  if (ok) *trace = partial.sum();
  return ok;
}

}  // namespace tessera::ggml::TESSERA_ISA_NAMESPACE
