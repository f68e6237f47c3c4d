// tessera/blocks/tensor_checks.hpp: a tensor's presence and shape, checked
// against what the hyper-parameters imply, with messages naming the file,
// the tensor and both shapes.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "tessera/status.hpp"
#include "tessera/weights.hpp"

namespace tessera::blocks {

// "[576, 64]"
std::string shape_string(const TensorRef& t);

// ok when `name` exists with exactly `shape`; else not_found / invalid_argument.
Status expect_tensor(const WeightStore& weights, const std::string& name, std::initializer_list<int64_t> shape);
// Like expect_tensor, but a missing tensor is fine (optional biases, untied output).
Status expect_optional_tensor(const WeightStore& weights, const std::string& name,
                              std::initializer_list<int64_t> shape);

// ok when `name` exists and holds exactly `n` values, whatever its stored
// rank (llama.cpp keeps Mamba-2's A as [n_head, 1], transformers as
// [n_head]); else not_found / invalid_argument.
Status expect_tensor_elements(const WeightStore& weights, const std::string& name, int64_t n);

}  // namespace tessera::blocks
