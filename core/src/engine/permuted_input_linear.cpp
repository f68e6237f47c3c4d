#include "engine/permuted_input_linear.hpp"

namespace tessera {

Status PermutedInputLinear::gather(const float* x, int64_t n_rows, std::vector<float>& into) const noexcept {
  return guard([&]() -> Status {
    const int64_t in = in_features();
    into.resize(static_cast<size_t>(n_rows * in));
    for (int64_t r = 0; r < n_rows; ++r) {
      const float* src = x + r * in;
      float* dst = into.data() + r * in;
      for (int64_t j = 0; j < in; ++j) dst[j] = src[order_[j]];
    }
    return Status::Ok();
  });
}

Status PermutedInputLinear::forward(const float* x, float* y, int64_t n_rows) noexcept {
  // One scratch per thread for every such Linear: forward() is done with it
  // when it returns, and a prefill's rows would make one per Linear costly.
  thread_local std::vector<float> gathered;
  TESSERA_RETURN_IF_ERROR(gather(x, n_rows, gathered));
  return inner_->forward(gathered.data(), y, n_rows);
}

Status PermutedInputLinear::prepare(const float* x, int64_t n_rows) noexcept {
  TESSERA_RETURN_IF_ERROR(gather(x, n_rows, prepared_));
  return inner_->prepare(prepared_.data(), n_rows);
}

}  // namespace tessera
