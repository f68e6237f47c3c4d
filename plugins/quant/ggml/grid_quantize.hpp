// grid_quantize.hpp: a weight matrix put onto the grids of a GGUF block
// format (block_grid.hpp: the legacy formats, Q4_K and Q5_K), by rounding to
// nearest, by GPTQ, or with AWQ's clipping search.
//
// GPTQ (Frantar et al., 2022, "GPTQ: Accurate Post-Training Quantization for
// Generative Pre-trained Transformers") quantizes the input columns one at a
// time and spreads each column's rounding error over the columns not yet
// quantized, weighted by the inverse Hessian of the layer's squared output
// error, H = sum over inputs of x xᵀ. As in the paper: damping (a fraction of
// the mean diagonal added to it), the Cholesky factor of H⁻¹, blocks of
// columns whose updates to later columns are applied lazily as one matrix
// product, and optionally act-order (columns by decreasing H diagonal). A
// block format's groups are fixed runs of 32 columns (16 for Q6_K), so with act-order every
// group's grid is chosen up front from the original weights (the reference's
// "static groups"); without it, from the updated weights when the group's
// first column is reached; for Q4_K/Q5_K/Q6_K, whose groups of a super-block
// share its scales, when the super-block's first column is reached. Input channels never seen in calibration (H
// diagonal 0) keep their weights and are rounded like the rest: the
// reference zeroes them, which would erase weights the calibration text
// merely did not exercise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <Eigen/Core>

#include "block_grid.hpp"
#include "tessera/status.hpp"

namespace tessera::ggml {

// rows x cols weights as grid indices; cols a multiple of grid_span(type).
struct GridWeights {
  DType type = DType::q4_0;
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<BlockGrid> grids;  // [rows, cols / grid_width(type)]
  std::vector<uint8_t> q;        // [rows, cols]

  const BlockGrid& grid(int64_t r, int64_t c) const {
    const int width = grid_width(type);
    return grids[static_cast<size_t>(r * (cols / width) + c / width)];
  }
  float value(int64_t r, int64_t c) const { return grid(r, c).value(q[static_cast<size_t>(r * cols + c)]); }
  // The stored bytes: rows of blocks in `type`'s layout.
  std::vector<std::byte> pack() const;
  // out[rows, cols]: the values the packed bytes hold.
  void values(float* out) const;
};

// w[rows, cols] row-major. Each block's grid as ggml's reference chooses it,
// each element rounded to the nearest value of its grid.
GridWeights round_to_nearest(DType type, const float* w, int64_t rows, int64_t cols);

struct GptqSettings {
  bool act_order = false;
  double damp = 0.01;             // of the mean diagonal of H
  int64_t block_columns = 128;    // columns whose updates are applied within the block; a multiple of 32
};

// w[rows, cols] row-major; hessian [cols, cols] symmetric (its lower triangle
// is read), the sum of x xᵀ over the inputs (its scale does not matter).
// internal error when H stays singular after damping.
Result<GridWeights> gptq(DType type, const float* w, int64_t rows, int64_t cols, const Eigen::MatrixXf& hessian,
                         const GptqSettings& settings);

// AWQ's clipping search (Lin et al., 2023, "AWQ: Activation-aware Weight
// Quantization"): like round_to_nearest, but each group's grid is chosen from
// its weights clamped to ±r·max|w| for the r in 1, 0.95, ..., 0.55 whose
// rounding error on the group's own share of the output, eᵀ H_bb e with
// H_bb the group's diagonal block of H (32x32; 16x16 for Q6_K), is least (the first on ties, so
// a group the inputs never reached keeps r = 1); a K format's groups one
// after another, each with the earlier ones' r in place. Every weight,
// clamped or not, is rounded to its nearest grid value. hessian: [cols,
// cols], lower triangle.
GridWeights round_to_nearest_clipped(DType type, const float* w, int64_t rows, int64_t cols,
                                     const Eigen::MatrixXf& hessian);

// ||(W - Q) X||² / ||W X||² as tr(Δ H Δᵀ) / tr(W H Wᵀ) with Δ = W - Q; with an
// empty hessian, ||W - Q||² / ||W||². 0 when the denominator is 0.
double relative_error(const float* w, const GridWeights& q, const Eigen::MatrixXf& hessian);

}  // namespace tessera::ggml
