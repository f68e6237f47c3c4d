#include "grid_quantize.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>
#include <numeric>
#include <string>
#include <vector>

#include "blocks.hpp"
#include "gptq_linear_algebra.hpp"
#include "hessian_products.hpp"

namespace tessera::ggml {
namespace {

using RowMajorMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

GridWeights empty_weights(const GridLayout& layout, int64_t rows, int64_t cols) {
  GridWeights g;
  g.layout = layout;
  g.type = layout.type;
  g.rows = rows;
  g.cols = cols;
  g.grids.resize(static_cast<size_t>(rows * g.grids_per_row()));
  g.q.resize(static_cast<size_t>(rows * cols));
  return g;
}

// Groups: the blocks that hold them, once every grid is chosen.
GridWeights finished(GridWeights g) {
  if (g.layout.is_groups()) g.type = group_block_type(g.layout.groups, g.grids);
  return g;
}

// The Cholesky factor U (upper, H⁻¹ = Uᵀ U) of the damped Hessian's inverse
// (gptq_linear_algebra.hpp); the damping grows tenfold, up to three times,
// while H stays singular. h: [n, n], both triangles filled.
Result<Eigen::MatrixXf> inverse_cholesky(const Eigen::MatrixXf& h, double damp, IsaLevel level) {
  const auto n = h.rows();
  const double mean_diagonal = static_cast<double>(h.diagonal().mean());
  Eigen::MatrixXf u(n, n);
  for (int attempt = 0; attempt < 4; ++attempt, damp *= 10) {
    switch (inverse_cholesky_upper(h.data(), n, static_cast<float>(damp * mean_diagonal), u.data(), level)) {
      case FactorOutcome::ok:
        return u;
      case FactorOutcome::out_of_memory:
        throw std::bad_alloc();  // as Eigen's own allocations report it
      case FactorOutcome::not_positive_definite:
        break;
    }
  }
  return Internal("GPTQ: the inputs' Hessian is not positive definite even with damping " + std::to_string(damp / 10) +
                  " of its mean diagonal");
}

}  // namespace

void GridLayout::choose(const float* x, int n, BlockGrid* grids) const {
  if (is_groups()) {
    grids[0] = choose_group_grid(groups, x, n);
  } else {
    choose_grids(type, x, grids);
  }
}

std::vector<std::byte> GridWeights::pack() const {
  const uint64_t block_bytes = dtype_info(type).block_bytes;
  const uint64_t block_elems = dtype_info(type).block_elems;
  std::vector<std::byte> out(static_cast<size_t>(rows * (cols / block_elems) * block_bytes));
  if (layout.is_groups()) {  // blocks of 32 inside groups of 32·k
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c0 = 0; c0 < cols; c0 += kBlock)
        pack_group_block(type, grid(r, c0), &q[static_cast<size_t>(r * cols + c0)],
                         out.data() + (r * cols + c0) / kBlock * block_bytes);
    return out;
  }
  const int span = layout.span();
  const int width = layout.width();
  const uint64_t span_bytes = block_bytes * (static_cast<uint64_t>(span) / block_elems);
  std::vector<int> idx(static_cast<size_t>(span));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < cols / span; ++b) {
      for (int j = 0; j < span; ++j) idx[static_cast<size_t>(j)] = q[static_cast<size_t>(r * cols + b * span + j)];
      pack_span(type, &grids[static_cast<size_t>(r * (cols / width) + b * span / width)], idx.data(),
                out.data() + (r * (cols / span) + b) * span_bytes);
    }
  }
  return out;
}

void GridWeights::values(float* out) const {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = value(r, c);
}

GridWeights round_to_nearest(const GridLayout& layout, const float* w, int64_t rows, int64_t cols) {
  const int span = layout.span();
  const int width = layout.width();
  GridWeights g = empty_weights(layout, rows, cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c0 = 0; c0 < cols; c0 += span) {
      const int n = static_cast<int>(std::min<int64_t>(span, cols - c0));
      const float* x = w + r * cols + c0;
      BlockGrid* grids = &g.grids[static_cast<size_t>(r * g.grids_per_row() + c0 / width)];
      layout.choose(x, n, grids);
      for (int j = 0; j < n; ++j)
        g.q[static_cast<size_t>(r * cols + c0 + j)] = static_cast<uint8_t>(grids[j / width].index(x[j]));
    }
  }
  return finished(std::move(g));
}

Result<GridWeights> gptq(const GridLayout& layout, const float* w, int64_t rows, int64_t cols,
                         const Eigen::MatrixXf& hessian, const GptqSettings& settings) {
  if (hessian.rows() != cols || hessian.cols() != cols)
    return Internal("GPTQ: the Hessian is " + std::to_string(hessian.rows()) + "x" + std::to_string(hessian.cols()) +
                    " for " + std::to_string(cols) + " input columns");
  GridWeights out = empty_weights(layout, rows, cols);
  const int width = layout.width();
  const int64_t groups = out.grids_per_row();
  const int span = layout.span();  // columns whose grids are chosen together

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
      for (int64_t c0 = 0; c0 < cols; c0 += span)
        layout.choose(w + r * cols + c0, static_cast<int>(std::min<int64_t>(span, cols - c0)),
                      &out.grids[static_cast<size_t>(r * groups + c0 / width)]);
  }

  // Columns and Hessian in quantization order; W column-major so a column is contiguous.
  Eigen::MatrixXf work(rows, cols);
  Eigen::MatrixXf h_ordered(cols, cols);
  const Eigen::Map<const RowMajorMatrix> original(w, rows, cols);
  for (int64_t k = 0; k < cols; ++k) {
    work.col(k) = original.col(order[static_cast<size_t>(k)]);
    for (int64_t j = 0; j < cols; ++j) h_ordered(j, k) = h(order[static_cast<size_t>(j)], order[static_cast<size_t>(k)]);
  }
  auto factor = inverse_cholesky(h_ordered, settings.damp, settings.level);
  if (!factor.ok()) return factor.status();
  const Eigen::MatrixXf& u = *factor;

  // Lazy blocks of whole spans (for groups wider than the setting: one group).
  const int64_t block = std::max<int64_t>(span, settings.block_columns / span * span);
  std::vector<float> span_values(static_cast<size_t>(span));
  for (int64_t i1 = 0; i1 < cols; i1 += block) {
    const int64_t i2 = std::min(cols, i1 + block);
    Eigen::MatrixXf errors(rows, i2 - i1);
    for (int64_t k = i1; k < i2; ++k) {
      const int64_t column = order[static_cast<size_t>(k)];
      const int64_t group = column / width;
      if (!settings.act_order && column % span == 0) {
        // Blocks are whole spans, so the span's columns have every update so far.
        const int n = static_cast<int>(std::min<int64_t>(span, cols - column));
        for (int64_t r = 0; r < rows; ++r) {
          for (int j = 0; j < n; ++j) span_values[static_cast<size_t>(j)] = work(r, k + j);
          layout.choose(span_values.data(), n, &out.grids[static_cast<size_t>(r * groups + group)]);
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
      // work[:, k+1 .. i2) -= errors[:, k] · U[k, k+1 .. i2)
      if (rest > 0 && !subtract_product(&work(0, k + 1), rows, &errors(0, k - i1), rows, &u(k, k + 1), cols, rows, rest,
                                        1, settings.level))
        throw std::bad_alloc();
    }
    // work[:, i2 ..) -= errors · U[i1 .. i2, i2 ..)
    if (i2 < cols && !subtract_product(&work(0, i2), rows, errors.data(), rows, &u(i1, i2), cols, rows, cols - i2,
                                       i2 - i1, settings.level))
      throw std::bad_alloc();
  }
  return finished(std::move(out));
}

GridWeights round_to_nearest_clipped(const GridLayout& layout, const float* w, int64_t rows, int64_t cols,
                                     const Eigen::MatrixXf& hessian) {
  constexpr int kCandidates = 10;  // r = 1 - i / 20
  const int span = layout.span();
  const int width = layout.width();
  GridWeights g = empty_weights(layout, rows, cols);
  const Eigen::MatrixXf h = hessian.selfadjointView<Eigen::Lower>();
  std::vector<float> clamped(static_cast<size_t>(span));
  std::vector<BlockGrid> grids(static_cast<size_t>(span / width));
  Eigen::VectorXf error(width);
  for (int64_t c0 = 0; c0 < cols; c0 += span) {
    const int n = static_cast<int>(std::min<int64_t>(span, cols - c0));  // a row's last group may be short
    const int groups_here = (n + width - 1) / width;
    for (int64_t r = 0; r < rows; ++r) {
      const float* x = w + r * cols + c0;
      std::copy(x, x + n, clamped.begin());
      // Group by group, each clamped at the candidate least costly on its own
      // share of the output; a K format's later groups are searched with the
      // earlier ones' choices in place (they share the super-block's scales).
      for (int b = 0; b < groups_here; ++b) {
        const int nb = std::min(width, n - b * width);
        const float* xb = x + b * width;
        float* cb = clamped.data() + b * width;
        const auto h_block = h.block(c0 + b * width, c0 + b * width, nb, nb);
        float amax = 0.0f;
        for (int j = 0; j < nb; ++j) amax = std::max(amax, std::fabs(xb[j]));
        float best_loss = std::numeric_limits<float>::infinity();
        int best_candidate = 0;
        for (int i = 0; i < kCandidates; ++i) {
          const float limit = amax * (1.0f - static_cast<float>(i) / 20.0f);
          for (int j = 0; j < nb; ++j) cb[j] = std::clamp(xb[j], -limit, limit);
          layout.choose(clamped.data(), n, grids.data());
          const BlockGrid& grid = grids[static_cast<size_t>(b)];
          for (int j = 0; j < nb; ++j) error[j] = xb[j] - grid.value(grid.index(xb[j]));
          const float loss = error.head(nb).dot(h_block * error.head(nb));
          if (loss < best_loss) {  // the first on ties: unreached inputs keep r = 1
            best_loss = loss;
            best_candidate = i;
          }
        }
        const float limit = amax * (1.0f - static_cast<float>(best_candidate) / 20.0f);
        for (int j = 0; j < nb; ++j) cb[j] = std::clamp(xb[j], -limit, limit);
      }
      BlockGrid* out = &g.grids[static_cast<size_t>(r * g.grids_per_row() + c0 / width)];
      layout.choose(clamped.data(), n, out);
      // Every weight, clamped or not, rounds to its nearest grid value.
      for (int j = 0; j < n; ++j)
        g.q[static_cast<size_t>(r * cols + c0 + j)] = static_cast<uint8_t>(out[j / width].index(x[j]));
    }
  }
  return finished(std::move(g));
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
    const auto lost_or = hessian_quadratic(delta.data(), q.rows, q.cols, h.data());
    const auto energy_or = hessian_quadratic(w, q.rows, q.cols, h.data());
    if (!lost_or || !energy_or) throw std::bad_alloc();
    lost = *lost_or;
    energy = *energy_or;
  }
  return energy > 0 ? lost / energy : 0.0;
}

}  // namespace tessera::ggml
