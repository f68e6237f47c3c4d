// formats.hpp: the storage formats this plugin executes, and checks that a
// TensorRef really holds what its format and shape promise.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "tessera/status.hpp"
#include "tessera/tensor.hpp"
#include "tessera/weights.hpp"

namespace tessera::ggml {

// "f32", "f16", "bf16", "ggml.q4_0", "ggml.q4_1", "ggml.q5_0", "ggml.q5_1", "ggml.q8_0", "ggml.q4_k",
// "ggml.q5_k", "ggml.q6_k", "ggml.q2_k", "ggml.q3_k".
std::span<const std::string_view> supported_formats();

// The formats QuantLinear multiplies in the quantized domain (Q8_1 activations,
// integer dot products): Q4_0, Q4_1, Q5_0, Q5_1, Q8_0. KQuantLinear takes the
// K-quants (is_kquant, Q8_K activations); the others (plain floats, and every
// format with activations = "f32") go through FloatLinear.
constexpr bool is_quantized_domain(DType t) {
  return t == DType::q4_0 || t == DType::q4_1 || t == DType::q5_0 || t == DType::q5_1 || t == DType::q8_0;
}
constexpr bool is_kquant(DType t) {
  return t == DType::q2_k || t == DType::q3_k || t == DType::q4_k || t == DType::q5_k || t == DType::q6_k;
}

// The element type behind a format name; nullopt for a format this plugin does not know.
std::optional<DType> format_dtype(std::string_view format);

// The tensor's format is known, agrees with its dtype, its rows are whole
// blocks, its data is present and exactly rows * row-bytes long. Messages name
// the tensor.
Status check_tensor(const TensorRef& t, DType* dtype_out);

}  // namespace tessera::ggml
