// permuted_input_linear.hpp: a Linear whose weight stores its input columns
// in another order (a GPTQ act-order checkpoint repacked into ggml blocks,
// model/hf_quantized.hpp) gathers its input into that order first.
#pragma once

#include <memory>
#include <vector>

#include "tessera/linear.hpp"

namespace tessera {

class PermutedInputLinear final : public Linear {
 public:
  // order [in_features]: the stored column j of `inner`'s weight holds input
  // channel order[j]; each is in [0, in_features) (the caller checked).
  PermutedInputLinear(std::unique_ptr<Linear> inner, std::vector<int32_t> order)
      : inner_(std::move(inner)), order_(std::move(order)) {}

  int64_t in_features() const noexcept override { return inner_->in_features(); }
  int64_t out_features() const noexcept override { return inner_->out_features(); }
  uint64_t weight_bytes() const noexcept override { return inner_->weight_bytes(); }
  Status forward(const float* x, float* y, int64_t n_rows) noexcept override;
  bool splits() const noexcept override { return inner_->splits(); }
  int64_t column_alignment() const noexcept override { return inner_->column_alignment(); }
  // The gathered input stays in this Linear's own buffer until the next prepare().
  Status prepare(const float* x, int64_t n_rows) noexcept override;
  void compute(float* y, int64_t begin, int64_t end) noexcept override { inner_->compute(y, begin, end); }

 private:
  Status gather(const float* x, int64_t n_rows, std::vector<float>& into) const noexcept;

  std::unique_ptr<Linear> inner_;
  std::vector<int32_t> order_;
  // [n_rows, in_features], input channels in order_: read by compute() after
  // prepare() (whose callers share inputs of a few rows only).
  std::vector<float> prepared_;
};

}  // namespace tessera
