// quantized_output_error.hpp: what a group of Linears loses once quantized
// and run by their quant plugin, measured on kept calibration inputs; the
// score SmoothQuant's alpha search minimises (awq_scales.hpp,
// search_smoothing).
//
// Measuring through the plugin's own Linear, rather than a model of its
// rounding, counts everything its kernels do: for INT8 W8A8 the per-token
// rounding of the activations, which no statistic of the inputs (AWQ's H)
// captures, as well as the weights'.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tessera/quantizer.hpp"
#include "tessera/status.hpp"
#include "tessera/weights.hpp"

namespace tessera {

class CoreModelBuilder;

// One Linear of the group: its weight as stored in the input (the name and
// shape the quantized tensor keeps), its f32 values [out, in] and quantizer.
struct OutputErrorMember {
  const TensorRef* weight = nullptr;
  const float* values = nullptr;
  WeightQuantizer* quantizer = nullptr;
};

class QuantizedOutputError {
 public:
  // inputs: [rows, in], the rows every member reads (kept while calibrating);
  // the float products inputs · Wᵀ are computed here, once.
  static Result<QuantizedOutputError> make(CoreModelBuilder& builder, std::vector<OutputErrorMember> members,
                                           std::span<const float> inputs);

  // Σ over members and outputs of (Q(W·diag(s)) run on inputs·diag(s)⁻¹ −
  // inputs · Wᵀ)², the members' weights quantized afresh (the quantizers'
  // parts() then describe the last candidate, so quantize again after).
  // input_scale: [in], all > 0.
  Result<double> operator()(std::span<const float> input_scale);

 private:
  QuantizedOutputError() = default;

  CoreModelBuilder* builder_ = nullptr;
  std::vector<OutputErrorMember> members_;
  std::span<const float> inputs_;           // [rows, in]
  int64_t rows_ = 0;
  int64_t cols_ = 0;                        // in
  std::vector<std::vector<float>> products_;  // per member: inputs · Wᵀ, [rows, out]
  std::vector<float> scaled_inputs_;        // scratch: [rows, in]
  std::vector<float> scaled_weight_;        // scratch: [out, in]
  std::vector<float> outputs_;              // scratch: [rows, out]
};

}  // namespace tessera
