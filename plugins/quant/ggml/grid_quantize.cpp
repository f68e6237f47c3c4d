#include "grid_quantize.hpp"

#include <Eigen/Cholesky>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "blocks.hpp"

namespace tessera::ggml {
namespace {

using RowMajorMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

GridWeights empty_weights(DType type, int64_t rows, int64_t cols) {
  GridWeights g;
  g.type = type;
  g.rows = rows;
  g.cols = cols;
  g.grids.resize(static_cast<size_t>(rows * (cols / kBlock)));
  g.q.resize(static_cast<size_t>(rows * cols));
  return g;
}

// The Cholesky factor U (upper, H⁻¹ = Uᵀ U) of the damped Hessian's inverse;
// the damping grows tenfold, up to three times, while H stays singular.
Result<Eigen::MatrixXf> inverse_cholesky(Eigen::MatrixXf h, double damp) {
  const auto n = h.rows();
  const double mean_diagonal = static_cast<double>(h.diagonal().mean());
  for (int attempt = 0; attempt < 4; ++attempt, damp *= 10) {
    Eigen::MatrixXf damped = h;
    damped.diagonal().array() += static_cast<float>(damp * mean_diagonal);
    Eigen::LLT<Eigen::MatrixXf> factor(damped);
    if (factor.info() != Eigen::Success) continue;
    const Eigen::MatrixXf inverse = factor.solve(Eigen::MatrixXf::Identity(n, n));
    Eigen::LLT<Eigen::MatrixXf> inverse_factor(inverse);
    if (inverse_factor.info() != Eigen::Success) continue;
    return Eigen::MatrixXf(inverse_factor.matrixU());
  }
  return Internal("GPTQ: the inputs' Hessian is not positive definite even with damping " + std::to_string(damp / 10) +
                  " of its mean diagonal");
}

}  // namespace

std::vector<std::byte> GridWeights::pack() const {
  const uint64_t block_bytes = dtype_info(type).block_bytes;
  std::vector<std::byte> out(static_cast<size_t>(rows * (cols / kBlock) * block_bytes));
  int idx[kBlock];
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < cols / kBlock; ++b) {
      for (int j = 0; j < kBlock; ++j) idx[j] = q[static_cast<size_t>(r * cols + b * kBlock + j)];
      pack_block(type, grid(r, b * kBlock), idx, out.data() + (r * (cols / kBlock) + b) * block_bytes);
    }
  }
  return out;
}

void GridWeights::values(float* out) const {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = value(r, c);
}

GridWeights round_to_nearest(DType type, const float* w, int64_t rows, int64_t cols) {
  GridWeights g = empty_weights(type, rows, cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c0 = 0; c0 < cols; c0 += kBlock) {
      const float* x = w + r * cols + c0;
      BlockGrid& grid = g.grids[static_cast<size_t>(r * (cols / kBlock) + c0 / kBlock)];
      grid = choose_block_grid(type, x);
      for (int j = 0; j < kBlock; ++j) g.q[static_cast<size_t>(r * cols + c0 + j)] = static_cast<uint8_t>(grid.index(x[j]));
    }
  }
  return g;
}

Result<GridWeights> gptq(DType type, const float* w, int64_t rows, int64_t cols, const Eigen::MatrixXf& hessian,
                         const GptqSettings& settings) {
  if (hessian.rows() != cols || hessian.cols() != cols)
    return Internal("GPTQ: the Hessian is " + std::to_string(hessian.rows()) + "x" + std::to_string(hessian.cols()) +
                    " for " + std::to_string(cols) + " input columns");
  GridWeights out = empty_weights(type, rows, cols);
  const int64_t groups = cols / kBlock;

  Eigen::MatrixXf h = hessian.selfadjointView<Eigen::Lower>();
  for (int64_t i = 0; i < cols; ++i) {
    if (h(i, i) == 0.0f) h(i, i) = 1.0f;  // never-seen input: no coupling, plain rounding
  }

  // order[k]: the original column quantized k-th.
  std::vector<int64_t> order(static_cast<size_t>(cols));
  std::iota(order.begin(), order.end(), 0);
  if (settings.act_order) {
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return h(a, a) > h(b, b); });
    // Static groups: every grid from the original weights.
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t g = 0; g < groups; ++g)
        out.grids[static_cast<size_t>(r * groups + g)] = choose_block_grid(type, w + r * cols + g * kBlock);
  }

  // Columns and Hessian in quantization order; W column-major so a column is contiguous.
  Eigen::MatrixXf work(rows, cols);
  Eigen::MatrixXf h_ordered(cols, cols);
  const Eigen::Map<const RowMajorMatrix> original(w, rows, cols);
  for (int64_t k = 0; k < cols; ++k) {
    work.col(k) = original.col(order[static_cast<size_t>(k)]);
    for (int64_t j = 0; j < cols; ++j) h_ordered(j, k) = h(order[static_cast<size_t>(j)], order[static_cast<size_t>(k)]);
  }
  auto factor = inverse_cholesky(std::move(h_ordered), settings.damp);
  if (!factor.ok()) return factor.status();
  const Eigen::MatrixXf& u = *factor;

  const int64_t block = std::max<int64_t>(kBlock, settings.block_columns / kBlock * kBlock);
  float group_values[kBlock];
  for (int64_t i1 = 0; i1 < cols; i1 += block) {
    const int64_t i2 = std::min(cols, i1 + block);
    Eigen::MatrixXf errors(rows, i2 - i1);
    for (int64_t k = i1; k < i2; ++k) {
      const int64_t column = order[static_cast<size_t>(k)];
      const int64_t group = column / kBlock;
      if (!settings.act_order && column % kBlock == 0) {
        // Blocks are whole groups, so the group's columns have every update so far.
        for (int64_t r = 0; r < rows; ++r) {
          for (int j = 0; j < kBlock; ++j) group_values[j] = work(r, k + j);
          out.grids[static_cast<size_t>(r * groups + group)] = choose_block_grid(type, group_values);
        }
      }
      const float diagonal = u(k, k);
      for (int64_t r = 0; r < rows; ++r) {
        const BlockGrid& grid = out.grids[static_cast<size_t>(r * groups + group)];
        const int q = grid.index(work(r, k));
        out.q[static_cast<size_t>(r * cols + column)] = static_cast<uint8_t>(q);
        errors(r, k - i1) = (work(r, k) - grid.value(q)) / diagonal;
      }
      const int64_t rest = i2 - k - 1;
      if (rest > 0) work.middleCols(k + 1, rest).noalias() -= errors.col(k - i1) * u.block(k, k + 1, 1, rest);
    }
    if (i2 < cols) work.rightCols(cols - i2).noalias() -= errors * u.block(i1, i2, i2 - i1, cols - i2);
  }
  return out;
}

GridWeights round_to_nearest_clipped(DType type, const float* w, int64_t rows, int64_t cols,
                                     const Eigen::MatrixXf& hessian) {
  constexpr int kCandidates = 10;  // r = 1 - i / 20
  GridWeights g = empty_weights(type, rows, cols);
  const Eigen::MatrixXf h = hessian.selfadjointView<Eigen::Lower>();
  float clamped[kBlock];
  Eigen::Matrix<float, kBlock, 1> error;
  for (int64_t c0 = 0; c0 < cols; c0 += kBlock) {
    const Eigen::Matrix<float, kBlock, kBlock> h_block = h.block<kBlock, kBlock>(c0, c0);
    for (int64_t r = 0; r < rows; ++r) {
      const float* x = w + r * cols + c0;
      float amax = 0.0f;
      for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
      BlockGrid best_grid = choose_block_grid(type, x);
      float best_loss = std::numeric_limits<float>::infinity();
      for (int i = 0; i < kCandidates; ++i) {
        const float limit = amax * (1.0f - static_cast<float>(i) / 20.0f);
        for (int j = 0; j < kBlock; ++j) clamped[j] = std::clamp(x[j], -limit, limit);
        const BlockGrid grid = choose_block_grid(type, clamped);
        for (int j = 0; j < kBlock; ++j) error[j] = x[j] - grid.value(grid.index(x[j]));
        const float loss = error.dot(h_block * error);
        if (loss < best_loss) {
          best_loss = loss;
          best_grid = grid;
        }
      }
      g.grids[static_cast<size_t>(r * (cols / kBlock) + c0 / kBlock)] = best_grid;
      for (int j = 0; j < kBlock; ++j)
        g.q[static_cast<size_t>(r * cols + c0 + j)] = static_cast<uint8_t>(best_grid.index(x[j]));
    }
  }
  return g;
}

double relative_error(const float* w, const GridWeights& q, const Eigen::MatrixXf& hessian) {
  const Eigen::Map<const RowMajorMatrix> original(w, q.rows, q.cols);
  RowMajorMatrix delta(q.rows, q.cols);
  q.values(delta.data());
  delta = original - delta;
  double lost = 0, energy = 0;
  if (hessian.size() == 0) {
    lost = static_cast<double>(delta.squaredNorm());
    energy = static_cast<double>(original.squaredNorm());
  } else {
    const Eigen::MatrixXf h = hessian.selfadjointView<Eigen::Lower>();
    lost = static_cast<double>((delta * h).cwiseProduct(delta).sum());
    energy = static_cast<double>((original * h).cwiseProduct(original).sum());
  }
  return energy > 0 ? lost / energy : 0.0;
}

}  // namespace tessera::ggml
