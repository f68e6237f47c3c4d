// quantized_views.hpp: what a WeightQuantizer made (QuantizedWeight and its
// QuantizedParts) seen as the tensors the engine runs and the core writes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tessera/quantizer.hpp"
#include "tessera/status.hpp"
#include "tessera/tensor.hpp"
#include "tessera/linear.hpp"
#include "tessera/weights.hpp"

namespace tessera {

// A part is a plain tensor of 1 to kMaxDims dimensions whose bytes fill its
// shape (the core writes it as it is); internal error naming what is wrong.
Status check_part(const std::string& weight_name, const QuantizedPart& part);

// The part as the tensor `weight_name + part.suffix` (check_part first).
TensorRef part_view(const std::string& weight_name, const QuantizedPart& part);

// `weight` (name and shape) holding `quantized`'s type and bytes.
TensorRef quantized_view(const TensorRef& weight, const QuantizedWeight& quantized);

class CoreModelBuilder;

// A Linear made of what a WeightQuantizer made, with the bytes it may read
// where they are (a plugin's Linear can point into them rather than copy):
// they live as long as it does.
struct QuantizedLinear {
  QuantizedWeight weight;
  std::vector<QuantizedPart> parts;
  std::vector<TensorRef> part_views;  // of `parts`
  std::unique_ptr<Linear> linear;     // reads `weight` and `parts`
};

// `quantizer`'s quantize() of `values` ([out, in] f32) for `weight` (its
// name and shape), checked to fill the shape in its type, its parts
// (check_part), and the builder's make_linear with `bias` (or none); errors
// name the weight. run_parts false: the parts stand in for the weight in a
// file (GPTQ checkpoint tensors) and the blocks run alone.
Result<QuantizedLinear> quantize_to_linear(CoreModelBuilder& builder, const TensorRef& weight,
                                           WeightQuantizer& quantizer, const float* values, bool run_parts = true,
                                           const TensorRef* bias = nullptr);

}  // namespace tessera
