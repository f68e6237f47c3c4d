// quant_linear.hpp: y = x·Wᵀ (+ b) for Q4_0 / Q4_1 / Q8_0 weights, computed in
// the quantized domain: activations are quantized once per call to Q8_1, then
// integer block dot products with per-block f32 scales (kernels.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "blocks.hpp"
#include "tessera/linear.hpp"
#include "tessera/tensor.hpp"

namespace tessera::ggml {

class QuantLinear final : public Linear {
 public:
  // `weights`: out_features rows of in_features / 32 blocks of `type`, kept by
  // pointer (it lives in the memory-mapped model). `bias`: empty or out_features.
  QuantLinear(const void* weights, DType type, int64_t out_features, int64_t in_features,
              std::vector<float> bias);

  int64_t in_features() const override { return in_; }
  int64_t out_features() const override { return out_; }
  uint64_t weight_bytes() const override { return static_cast<uint64_t>(out_) * row_bytes_; }
  Status forward(const float* x, float* y, int64_t n_rows) noexcept override;

 private:
  const uint8_t* weights_;
  DType type_;
  int64_t out_;
  int64_t in_;
  size_t row_bytes_;
  std::vector<float> bias_;
  std::vector<BlockQ8_1> x_q8_;  // [n_rows, in / 32] quantized activations; grows, never shrinks
};

}  // namespace tessera::ggml
