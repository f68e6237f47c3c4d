// grid_quantize.hpp: a weight matrix put onto the grids of a GGUF block
// format (block_grid.hpp: the legacy formats, Q3_K to Q6_K) or onto
// GPTQ-checkpoint groups (group_grid.hpp: b-bit integers with a scale and
// zero per group of 32·k columns), by rounding to nearest, by GPTQ, or with
// AWQ's clipping search.
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
#include "group_grid.hpp"
#include "tessera/isa.hpp"
#include "tessera/quantizer.hpp"
#include "tessera/status.hpp"

namespace tessera::ggml {

// What the weights are put onto: a block format's own grids (a DType
// converts to this), or GPTQ groups.
struct GridLayout {
  GridLayout(DType block_type) : type(block_type) {}  // NOLINT: every block format is a layout
  explicit GridLayout(const GroupShape& shape) : groups(shape) {}

  DType type = DType::q4_0;  // a block format's; for groups, decided once quantized (group_block_type)
  GroupShape groups;         // groups.bits 0: a block format

  bool is_groups() const { return groups.bits != 0; }
  // Columns of one grid, and columns whose grids are chosen together.
  int width() const { return is_groups() ? groups.size : grid_width(type); }
  int span() const { return is_groups() ? groups.size : grid_span(type); }
  // The grids of x[n] (n = span(), or less for a row's last group).
  void choose(const float* x, int n, BlockGrid* grids) const;
};

// rows x cols weights as grid indices; cols a multiple of the layout's span
// (groups: of 32, the last group may be shorter).
struct GridWeights {
  GridLayout layout = DType::q4_0;
  DType type = DType::q4_0;      // the blocks pack() writes (groups: the one group_block_type picks)
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<BlockGrid> grids;  // [rows, ceil(cols / layout.width())]
  std::vector<uint8_t> q;        // [rows, cols]

  int64_t grids_per_row() const { return (cols + layout.width() - 1) / layout.width(); }
  const BlockGrid& grid(int64_t r, int64_t c) const {
    return grids[static_cast<size_t>(r * grids_per_row() + c / layout.width())];
  }
  float value(int64_t r, int64_t c) const { return grid(r, c).value(q[static_cast<size_t>(r * cols + c)]); }
  // The stored bytes: rows of blocks in `type`'s layout.
  std::vector<std::byte> pack() const;
  // out[rows, cols]: the values the packed bytes hold.
  void values(float* out) const;
};

// w[rows, cols] row-major. Each block's grid as ggml's reference chooses it
// (groups: as GPTQ's reference does), each element rounded to the nearest
// value of its grid.
GridWeights round_to_nearest(const GridLayout& layout, const float* w, int64_t rows, int64_t cols);

struct GptqSettings {
  bool act_order = false;
  double damp = QuantizeSpec{}.damp;  // of the mean diagonal of H; the SDK's default, one literal
  int64_t block_columns = 128;    // columns whose updates are applied within the block; a multiple of 32
  IsaLevel level = best_isa_level();  // of the dense linear algebra (gptq_linear_algebra.hpp); tests pin each
};

// w[rows, cols] row-major; hessian [cols, cols] symmetric (its lower triangle
// is read), the sum of x xᵀ over the inputs (its scale does not matter).
// internal error when H stays singular after damping.
Result<GridWeights> gptq(const GridLayout& layout, const float* w, int64_t rows, int64_t cols, const Eigen::MatrixXf& hessian,
                         const GptqSettings& settings);

// AWQ's clipping search (Lin et al., 2023, "AWQ: Activation-aware Weight
// Quantization"): like round_to_nearest, but each group's grid is chosen from
// its weights clamped to ±r·max|w| for the r in 1, 0.95, ..., 0.55 whose
// rounding error on the group's own share of the output, eᵀ H_bb e with
// H_bb the group's diagonal block of H (32x32; 16x16 for Q3_K/Q6_K; a GPTQ group's size), is least (the first on ties, so
// a group the inputs never reached keeps r = 1); a K format's groups one
// after another, each with the earlier ones' r in place. Every weight,
// clamped or not, is rounded to its nearest grid value. hessian: [cols,
// cols], lower triangle.
GridWeights round_to_nearest_clipped(const GridLayout& layout, const float* w, int64_t rows, int64_t cols,
                                     const Eigen::MatrixXf& hessian);

// ||(W - Q) X||² / ||W X||² as tr(Δ H Δᵀ) / tr(W H Wᵀ) with Δ = W - Q; with an
// empty hessian, ||W - Q||² / ||W||². 0 when the denominator is 0.
double relative_error(const float* w, const GridWeights& q, const Eigen::MatrixXf& hessian);

}  // namespace tessera::ggml
