#include "engine/calibration_linear.hpp"

#include <algorithm>
#include <cmath>
#include <exception>

namespace tessera {

std::vector<float> CalibrationLinear::mean_abs_input() const {
  std::vector<float> mean(sum_abs_input_.size(), 0.0f);
  if (observed_rows_ == 0) return mean;
  for (size_t j = 0; j < mean.size(); ++j)
    mean[j] = static_cast<float>(sum_abs_input_[j] / static_cast<double>(observed_rows_));
  return mean;
}

Status CalibrationLinear::forward_quantized(const float* x, float* y, int64_t n_rows) noexcept {
  if (input_divisor_.empty()) return quantized_->forward(x, y, n_rows);
  try {
    const auto cols = static_cast<int64_t>(input_divisor_.size());
    scaled_input_.resize(static_cast<size_t>(n_rows * cols));
    for (int64_t r = 0; r < n_rows; ++r)
      for (int64_t j = 0; j < cols; ++j) scaled_input_[r * cols + j] = x[r * cols + j] / input_divisor_[j];
  } catch (const std::exception& e) {
    return exception_status(e.what());
  }
  return quantized_->forward(scaled_input_.data(), y, n_rows);
}

Status CalibrationLinear::forward(const float* x, float* y, int64_t n_rows) noexcept {
  switch (role_) {
    case Role::stop:
      *stopped_ = true;
      return Unavailable("the calibration pass ends before this layer");
    case Role::observe: {
      TESSERA_RETURN_IF_ERROR(observer_->observe(x, n_rows));
      const int64_t cols = reference_->in_features();
      for (int64_t r = 0; r < n_rows; ++r)
        for (int64_t j = 0; j < cols; ++j) {
          const float a = std::fabs(x[r * cols + j]);
          sum_abs_input_[j] += a;
          max_abs_input_[j] = std::max(max_abs_input_[j], a);
        }
      if (keep_every_ > 0) {
        try {
          for (int64_t r = 0; r < n_rows; ++r) {
            // Half a stride in: when the stride divides the sample length,
            // offset 0 would keep every sample's first (BOS) row, whose
            // outsized activations would then weigh far beyond their share.
            if ((observed_rows_ + r) % keep_every_ == keep_every_ / 2)
              kept_inputs_.insert(kept_inputs_.end(), x + r * cols, x + (r + 1) * cols);
          }
        } catch (const std::exception& e) {
          return exception_status(e.what());
        }
      }
      observed_rows_ += n_rows;
      if (!observe_product_) {
        std::fill(y, y + n_rows * reference_->out_features(), 0.0f);
        return Status::Ok();
      }
      return reference_->forward(x, y, n_rows);
    }
    case Role::capture:
      try {
        captured_.insert(captured_.end(), x, x + n_rows * reference_->in_features());
      } catch (const std::exception& e) {
        return exception_status(e.what());
      }
      return reference_->forward(x, y, n_rows);
    case Role::quantized: return forward_quantized(x, y, n_rows);
    case Role::reference: break;
  }
  return reference_->forward(x, y, n_rows);
}

}  // namespace tessera
