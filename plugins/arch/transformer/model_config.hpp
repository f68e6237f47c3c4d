// model_config.hpp: the hyper-parameters a Llama-family model needs, checked and
// completed (head_dim, vocab_size) from what the weight store offers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/status.hpp"
#include "tessera/weights.hpp"

namespace tessera::transformer {

// general.architecture values this plugin serves.
const std::vector<std::string>& supported_architectures();

struct ModelConfig {
  ModelHParams hparams;    // as given, with head_dim and vocab_size filled in
  int64_t n_embd = 0;      // d_model
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_kv_head = 0;
  int64_t head_dim = 0;
  int64_t n_ff = 0;        // SwiGLU hidden size
  int64_t vocab = 0;
  int64_t max_context = 0;

  int64_t q_dim() const { return n_head * head_dim; }      // width of Q and of the attention output
  int64_t kv_dim() const { return n_kv_head * head_dim; }  // width of K and V
};

// Checks the hyper-parameters of `weights` (positive, within sane bounds, heads
// divisible for GQA, RoPE settings usable) and fills what is derivable: head_dim
// = n_embd / n_head when absent, vocab_size from token_embd.weight when absent.
// Errors name the source file and the offending value.
Result<ModelConfig> resolve_config(const WeightStore& weights);

// "[576, 64]"
std::string shape_string(const TensorRef& t);

// ok when `name` exists with exactly `shape`; else not_found / invalid_argument
// naming the file, the tensor, the expected and the actual shape.
Status expect_tensor(const WeightStore& weights, const std::string& name,
                     std::initializer_list<int64_t> shape);
// Like expect_tensor, but a missing tensor is fine (optional biases, untied output).
Status expect_optional_tensor(const WeightStore& weights, const std::string& name,
                              std::initializer_list<int64_t> shape);

}  // namespace tessera::transformer
