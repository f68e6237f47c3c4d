#include "engine/permuted_input_linear.hpp"

namespace tessera {

Status PermutedInputLinear::gather(const float* x, int64_t n_rows) noexcept {
  return guard([&]() -> Status {
    const int64_t in = in_features();
    gathered_.resize(static_cast<size_t>(n_rows * in));
    for (int64_t r = 0; r < n_rows; ++r) {
      const float* src = x + r * in;
      float* dst = gathered_.data() + r * in;
      for (int64_t j = 0; j < in; ++j) dst[j] = src[order_[j]];
    }
    return Status::Ok();
  });
}

Status PermutedInputLinear::forward(const float* x, float* y, int64_t n_rows) noexcept {
  TESSERA_RETURN_IF_ERROR(gather(x, n_rows));
  return inner_->forward(gathered_.data(), y, n_rows);
}

Status PermutedInputLinear::prepare(const float* x, int64_t n_rows) noexcept {
  TESSERA_RETURN_IF_ERROR(gather(x, n_rows));
  return inner_->prepare(gathered_.data(), n_rows);
}

}  // namespace tessera
