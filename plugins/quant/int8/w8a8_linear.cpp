#include "w8a8_linear.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "hadamard_rotation.hpp"

namespace tessera::int8 {

float quantize_activation_row(const float* x, int64_t n, int64_t n_padded, int8_t* q) {
  float amax = 0.0f;
  float poison = 0.0f;  // NaN when any x is NaN or infinite (x * 0)
  for (int64_t k = 0; k < n; ++k) {
    amax = std::max(amax, std::fabs(x[k]));
    poison += x[k] * 0.0f;
  }
  std::fill(q + n, q + n_padded, int8_t{0});
  if (poison != 0.0f || std::isnan(poison)) {
    std::fill(q, q + n, int8_t{0});
    return std::numeric_limits<float>::quiet_NaN();
  }
  const float inv = 127.0f / amax;
  // A row of zeros, or so small that 127 / amax overflows: its products are
  // below anything f32 sums keep.
  if (!(inv <= std::numeric_limits<float>::max())) {
    std::fill(q, q + n, int8_t{0});
    return 0.0f;
  }
  for (int64_t k = 0; k < n; ++k) q[k] = static_cast<int8_t>(static_cast<int32_t>(round_to_even_small(x[k] * inv)));
  return amax / 127.0f;
}

W8A8Linear::W8A8Linear(PackedWeight weight, std::vector<float> bias, bool two_terms, bool rotated)
    : w_(std::move(weight)), bias_(std::move(bias)), two_terms_(two_terms), rotated_(rotated) {}

uint64_t W8A8Linear::weight_bytes() const noexcept {
  return static_cast<uint64_t>(w_.out) * static_cast<uint64_t>(w_.in) + static_cast<uint64_t>(w_.out) * 4;
}

void W8A8Linear::finish(const int32_t* acc, const int32_t* acc2, size_t acc_stride, int64_t row0, int nx, int64_t o0,
                        int n_out, float* y) const {
  const int n = static_cast<int>(std::min<int64_t>(n_out, w_.out - o0));
  for (int xi = 0; xi < nx; ++xi) {
    const float sx = row_scales_[static_cast<size_t>(row0 + xi)];
    float* yr = y + (row0 + xi) * w_.out + o0;
    const int32_t* a = acc + xi * acc_stride;
    for (int r = 0; r < n; ++r) {
      const float sw = w_.scales[static_cast<size_t>(o0 + r)];
      float v = static_cast<float>(a[r]) * (sx * sw);
      if (acc2 != nullptr) {
        const float sx2 = row_scales_[static_cast<size_t>(rows_ + row0 + xi)];
        v += static_cast<float>(acc2[xi * acc_stride + r]) * (sx2 * sw);
      }
      yr[r] = bias_.empty() ? v : v + bias_[static_cast<size_t>(o0 + r)];
    }
  }
}

void W8A8Linear::plan(int64_t n_rows) {
  kernels_ = &active_kernels();
  tiles_ = kernels_->panel_tiles != nullptr && n_rows >= kTileBlockRows && w_.n_panels >= 2;
  rows_ = n_rows;
  const int64_t padded = tiles_ ? (n_rows + kTileBlockRows - 1) / kTileBlockRows * kTileBlockRows : n_rows;
  const int64_t stride = w_.in_padded(), terms = two_terms_ ? 2 : 1;
  padded_rows_ = padded;
  if (q_.size() < static_cast<size_t>(terms * padded * stride)) q_.resize(static_cast<size_t>(terms * padded * stride));
  if (row_scales_.size() < static_cast<size_t>(terms * n_rows))
    row_scales_.resize(static_cast<size_t>(terms * n_rows));
  // Rows past n_rows (tile padding) are zero: their sums are never read.
  for (int64_t t = 0; t < terms; ++t)
    std::fill(q_.begin() + (t * padded + n_rows) * stride, q_.begin() + (t + 1) * padded * stride, int8_t{0});
}

void W8A8Linear::quantize_row(const float* x, int64_t r) {
  const int64_t stride = w_.in_padded();
  const float* row = x + r * w_.in;
  if (rotated_) {
    thread_local std::vector<float> rotated;  // [in]: x[r]·R
    rotated.assign(row, row + w_.in);
    rotate_row(rotated.data(), w_.in);
    row = rotated.data();
  }
  int8_t* q = q_.data() + r * stride;
  const float sx = quantize_activation_row(row, w_.in, stride, q);
  row_scales_[static_cast<size_t>(r)] = sx;
  if (!two_terms_) return;
  // The second term: what the first left out, quantized on its own scale (a
  // poisoned row's NaN scale already makes its outputs NaN).
  thread_local std::vector<float> error;
  error.resize(static_cast<size_t>(w_.in));
  for (int64_t k = 0; k < w_.in; ++k) error[static_cast<size_t>(k)] = std::isnan(sx) ? 0.0f : row[k] - sx * q[k];
  int8_t* q2 = q_.data() + (padded_rows_ + r) * stride;
  row_scales_[static_cast<size_t>(rows_ + r)] = quantize_activation_row(error.data(), w_.in, stride, q2);
}

void W8A8Linear::run_panels(int64_t p0, int64_t p1, float* y) const {
  const KernelTable& k = *kernels_;
  const size_t stride = static_cast<size_t>(w_.in_padded());
  int64_t p = p0;
  if (tiles_) {
    for (; p + 1 < p1; p += 2) {
      for (int64_t r = 0; r < rows_; r += kTileBlockRows) {
        alignas(64) int32_t acc[2][kTileBlockRows * kTileBlockRows];
        k.panel_tiles(w_.panel(p), w_.panel_bytes(), w_.k_chunks, term(0) + r * stride, stride, acc[0]);
        if (two_terms_) k.panel_tiles(w_.panel(p), w_.panel_bytes(), w_.k_chunks, term(1) + r * stride, stride, acc[1]);
        const int nx = static_cast<int>(std::min<int64_t>(kTileBlockRows, rows_ - r));
        finish(acc[0], two_terms_ ? acc[1] : nullptr, kTileBlockRows, r, nx, p * kPanelRows, kTileBlockRows, y);
      }
    }
  }
  for (; p < p1; ++p) {
    const int32_t* row_sums = w_.row_sums.data() + p * kPanelRows;
    for (int64_t r = 0; r < rows_; r += kMaxDotRows) {
      int32_t acc[2][kMaxDotRows * kPanelRows];
      const int nx = static_cast<int>(std::min<int64_t>(kMaxDotRows, rows_ - r));
      k.panel_dot(w_.panel(p), row_sums, w_.k_chunks, term(0) + r * stride, stride, nx, acc[0]);
      if (two_terms_) k.panel_dot(w_.panel(p), row_sums, w_.k_chunks, term(1) + r * stride, stride, nx, acc[1]);
      finish(acc[0], two_terms_ ? acc[1] : nullptr, kPanelRows, r, nx, p * kPanelRows, kPanelRows, y);
    }
  }
}

Status W8A8Linear::prepare(const float* x, int64_t n_rows) noexcept {
  if (n_rows <= 0) return InvalidArgument("int8 linear: prepare needs at least one row");
  if (x == nullptr) return InvalidArgument("int8 linear: null input");
  return guard([&]() -> Status {
    plan(n_rows);
    for (int64_t r = 0; r < n_rows; ++r) quantize_row(x, r);
    return Status::Ok();
  });
}

void W8A8Linear::compute(float* y, int64_t begin, int64_t end) noexcept {
  if (kernels_ == nullptr || rows_ <= 0 || y == nullptr) return;
  begin = std::clamp<int64_t>(begin, 0, w_.out);
  end = std::clamp<int64_t>(end, 0, w_.out);
  run_panels(begin / kPanelRows, (end + kPanelRows - 1) / kPanelRows, y);
}

Status W8A8Linear::forward(const float* x, float* y, int64_t n_rows) noexcept {
  return guard([&]() -> Status {
    if (n_rows <= 0) return Status::Ok();
    if (x == nullptr || y == nullptr) return InvalidArgument("int8 linear: null input or output");
    plan(n_rows);
#pragma omp parallel
    {
#pragma omp for schedule(static)
      for (int64_t r = 0; r < n_rows; ++r) quantize_row(x, r);
      // Thread t of nt takes pairs [P t / nt, P (t+1) / nt) of the panels.
      const int64_t pairs = (w_.n_panels + 1) / 2, nt = omp_get_num_threads(), t = omp_get_thread_num();
      run_panels(2 * (pairs * t / nt), std::min(w_.n_panels, 2 * (pairs * (t + 1) / nt)), y);
    }
    return Status::Ok();
  });
}

}  // namespace tessera::int8
