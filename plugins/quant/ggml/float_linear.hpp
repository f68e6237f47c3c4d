// float_linear.hpp: y = x·Wᵀ (+ b) computed in f32, for weights stored as
// f32/f16/bf16 and for block formats (when the plugin's activations = "f32";
// otherwise QuantLinear and KQuantLinear take them). One activation row with
// plain-float weights is dotted straight from them (f16/bf16 widened inside
// the SIMD dot), as is one row with Q4_0/Q4_1/Q8_0 weights (KernelTable::
// q4_1_f32, ...). Otherwise weight rows are widened or dequantized to f32 a
// few at a time (f32 rows used in place) and multiplied with every activation
// row of the chunk by f32 tiles (KernelTable::f32_tile). Either way a row gets
// the same bits.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/linear.hpp"
#include "tessera/tensor.hpp"

namespace tessera::ggml {

class FloatLinear final : public Linear {
 public:
  FloatLinear(const void* weights, DType type, int64_t out_features, int64_t in_features,
              std::vector<float> bias);

  int64_t in_features() const noexcept override { return in_; }
  int64_t out_features() const noexcept override { return out_; }
  uint64_t weight_bytes() const noexcept override { return static_cast<uint64_t>(out_) * row_bytes_; }
  Status forward(const float* x, float* y, int64_t n_rows) noexcept override;

 private:
  const uint8_t* weights_;
  DType type_;
  int64_t out_;
  int64_t in_;
  size_t row_bytes_;
  std::vector<float> bias_;
};

}  // namespace tessera::ggml
