// quantized_views.hpp: what a WeightQuantizer made (QuantizedWeight and its
// QuantizedParts) seen as the tensors the engine runs and the core writes.
#pragma once

#include <string>

#include "tessera/quantizer.hpp"
#include "tessera/status.hpp"
#include "tessera/tensor.hpp"
#include "tessera/weights.hpp"

namespace tessera {

// A part is a plain tensor of 1 to kMaxDims dimensions whose bytes fill its
// shape (the core writes it as it is); internal error naming what is wrong.
Status check_part(const std::string& weight_name, const QuantizedPart& part);

// The part as the tensor `weight_name + part.suffix` (check_part first).
TensorRef part_view(const std::string& weight_name, const QuantizedPart& part);

// `weight` (name and shape) holding `quantized`'s type and bytes.
TensorRef quantized_view(const TensorRef& weight, const QuantizedWeight& quantized);

}  // namespace tessera
