#include "engine/calibration_linear.hpp"

namespace tessera {

Status CalibrationLinear::forward(const float* x, float* y, int64_t n_rows) noexcept {
  switch (role_) {
    case Role::stop:
      *stopped_ = true;
      return Unavailable("the calibration pass ends before this layer");
    case Role::observe:
      TESSERA_RETURN_IF_ERROR(observer_->observe(x, n_rows));
      observed_rows_ += n_rows;
      return reference_->forward(x, y, n_rows);
    case Role::quantized: return quantized_->forward(x, y, n_rows);
    case Role::reference: break;
  }
  return reference_->forward(x, y, n_rows);
}

}  // namespace tessera
