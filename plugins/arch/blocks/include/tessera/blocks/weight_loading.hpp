// tessera/blocks/weight_loading.hpp: turning checked tensors into what a
// forward uses: Linears made by the quant plugin of each weight's format, and
// small tensors (norms, biases, SSM parameters) as f32 vectors.
//
// Call these after the tensors' presence and shapes were checked
// (tensor_checks.hpp), so a bad file fails before any kernel is made.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/architecture.hpp"

namespace tessera::blocks {

// A Linear for `weight` (+ `bias` when non-empty and present), double-checked
// against [out_features, in_features] in case a quant plugin reads the shape
// differently; adds what one forward reads of it to `weight_bytes`.
Status make_linear(ModelBuilder& builder, const std::string& weight, const std::string& bias, int64_t out_features,
                   int64_t in_features, std::unique_ptr<Linear>& out, uint64_t& weight_bytes);

// The same for the output head (logits over the vocabulary), made through
// ModelBuilder::output_linear where the core offers it (ABI 3.9): the core may
// keep only some of the vocabulary's rows there (a speculative draft's),
// out_features still the whole vocabulary.
Status make_output_linear(ModelBuilder& builder, const std::string& weight, int64_t vocab, int64_t in_features,
                          std::unique_ptr<Linear>& out, uint64_t& weight_bytes);

// out[n] = tensor `name` as f32, in whatever format it is stored. The tensor
// must exist with n elements.
Status load_vector(ModelBuilder& builder, const std::string& name, int64_t n, std::vector<float>& out);

}  // namespace tessera::blocks
