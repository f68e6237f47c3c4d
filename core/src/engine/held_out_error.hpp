// held_out_error.hpp: how a quantized Linear does on inputs it was not
// calibrated on (`tessera quantize --held-out TEXT`).
//
// A calibrated method's error on its own calibration inputs (the report's
// relative_error, from H) says how well it fitted them, not how it does on
// other text: GPTQ cuts that error to a fifth of rounding's and can still
// score worse than rounding on a text unlike its calibration text
// (docs/quantization.md). This measures the Linear the plugin built, run on
// a second text's inputs to it (taken through the quantized layers before,
// as the calibration inputs are), against the float product: the output
// error relative to the output's energy, as relative_error defines it.
#pragma once

#include <cstdint>
#include <span>

#include "tessera/linear.hpp"
#include "tessera/quantizer.hpp"
#include "tessera/status.hpp"
#include "tessera/tensor.hpp"

namespace tessera {

class CoreModelBuilder;

struct OutputError {
  double lost = 0;    // Σ (y_q − y)² over the rows and outputs
  double energy = 0;  // Σ y²
  // Σ over rows of Σ (y_q − y)² / Σ y² (rows with no output energy left
  // out), and the rows counted: each token's error weighs the same, where in
  // relative() the few rows with outsized activations (the first token of a
  // window in Qwen2.5) outweigh the rest.
  double row_relative_sum = 0;
  int64_t rows = 0;
  double relative() const { return energy > 0 ? lost / energy : 0.0; }
  double mean_row_relative() const { return rows > 0 ? row_relative_sum / static_cast<double>(rows) : 0.0; }
};

// How the Linear's inputs and outputs were rescaled (AWQ, SmoothQuant):
// the quantized Linear reads inputs ./ input_divisor, and its outputs times
// output_scale are the float model's (a Linear whose rows took the next
// group's 1/s: up before down). Empty: none.
struct LinearRescaling {
  std::span<const float> input_divisor;  // [in]
  std::span<const float> output_scale;   // [out]
};

// `linear` run on inputs ./ input_divisor, less `bias`, against the float
// product (inputs ./ input_divisor)·Wᵀ, both times output_scale: the error
// in the float model's outputs. weight: [out, in] f32, the values `linear`
// was quantized from (after any scaling); bias: [out] or empty; inputs:
// [rows, in] as the Linear receives them in the float model.
Result<OutputError> measure_output_error(Linear& linear, const float* weight, std::span<const float> bias,
                                         const LinearRescaling& rescaling, std::span<const float> inputs);

// The same for the Linear `quantizer` makes of `values` ([out, in] f32) for
// `weight` (its name and shape), without a bias or divisor: quantize(), its
// parts, the builder's make_linear (quantized_views.hpp's quantize_to_linear,
// `run_parts` as there), then the measure.
Result<OutputError> measure_quantized_output_error(CoreModelBuilder& builder, const TensorRef& weight,
                                                   WeightQuantizer& quantizer, const float* values,
                                                   std::span<const float> inputs, bool run_parts);

}  // namespace tessera
