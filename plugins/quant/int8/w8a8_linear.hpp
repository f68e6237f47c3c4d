// w8a8_linear.hpp: y = x·Wᵀ (+ b) for an INT8 W8A8 weight: int8 weights with
// one scale per output row, activations quantized per row (per token) to
// int8 with one scale each at every forward, products summed in integers:
//   y[t][o] = f32(sum_k W[o][k] * q[t][k]) * (sx[t] * sw[o]) + b[o]
// with sx[t] = max_k |x[t][k]| / 127 and q[t][k] = x[t][k] / sx[t] rounded to
// nearest (ties to even). With two activation terms (the plugin's
// activations = "q8x2") the rounding error of each row is quantized again,
// e[t][k] = x[t][k] - sx[t] q[t][k] into q2 with its own scale sx2[t], and
//   y[t][o] = f32(sum_k W[o][k] q[t][k]) (sx[t] sw[o]) + f32(sum_k W[o][k] q2[t][k]) (sx2[t] sw[o]) + b[o]
// so the activations' rounding shrinks ~254-fold for twice the integer work.
// A weight stored rotated (W·R, hadamard_rotation.hpp) has each activation
// row multiplied by R before it is quantized: (x R)(W R)ᵀ = x Wᵀ.
// Decode and small batches run the panel dot of the CPU's level; 32 rows or
// more run on AMX tiles where the CPU has them.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/linear.hpp"
#include "w8a8_kernels.hpp"
#include "w8a8_layout.hpp"

namespace tessera::int8 {

// Quantizes one activation row x [n] into q [n_padded] (zeros past n) and returns
// its scale sx; a row holding NaN or infinity gets sx = NaN (its outputs are NaN).
float quantize_activation_row(const float* x, int64_t n, int64_t n_padded, int8_t* q);

class W8A8Linear final : public Linear {
 public:
  W8A8Linear(PackedWeight weight, std::vector<float> bias, bool two_terms = false, bool rotated = false);

  int64_t in_features() const noexcept override { return w_.in; }
  int64_t out_features() const noexcept override { return w_.out; }
  uint64_t weight_bytes() const noexcept override;
  Status forward(const float* x, float* y, int64_t n_rows) noexcept override;
  // Units of two panels, so that a range never splits a pair of the tiles.
  bool splits() const noexcept override { return true; }
  int64_t column_alignment() const noexcept override { return 2 * kPanelRows; }
  Status prepare(const float* x, int64_t n_rows) noexcept override;
  void compute(float* y, int64_t begin, int64_t end) noexcept override;

 private:
  // Sizes the scratch and picks the kernels for n_rows activation rows.
  void plan(int64_t n_rows);
  void quantize_row(const float* x, int64_t r);
  // Output rows of panels [p0, p1) for every prepared activation row.
  void run_panels(int64_t p0, int64_t p1, float* y) const;
  // acc[xi * acc_stride + r] (and acc2's, the second term's, or nullptr) for
  // rows [row0, row0 + nx) and weight rows [o0, o0 + n_out) into y, with the
  // scales and bias.
  void finish(const int32_t* acc, const int32_t* acc2, size_t acc_stride, int64_t row0, int nx, int64_t o0, int n_out,
              float* y) const;
  // Term t's quantized activation rows.
  const int8_t* term(int t) const { return q_.data() + static_cast<size_t>(t * padded_rows_ * w_.in_padded()); }

  PackedWeight w_;
  std::vector<float> bias_;            // [out] or empty
  bool two_terms_;
  bool rotated_;                       // w_ holds W·R: inputs are rotated before they are quantized
  std::vector<int8_t> q_;              // [terms, rows (padded to 32 for tiles), in_padded]: this forward's activations
  std::vector<float> row_scales_;      // [terms, rows]: their scales
  int64_t padded_rows_ = 0;
  const KernelTable* kernels_ = nullptr;  // this forward's
  int64_t rows_ = 0;                   // activation rows prepared
  bool tiles_ = false;                 // whether pairs of panels run on AMX tiles
};

}  // namespace tessera::int8
