// model_config.hpp: the hyper-parameters a Llama-family model needs, checked and
// completed (head_dim, vocab_size) from what the weight store offers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "llama_hparams.hpp"
#include "tensor_names.hpp"
#include "tessera/blocks/rope.hpp"
#include "tessera/status.hpp"
#include "tessera/weights.hpp"

namespace tessera::transformer {

struct ModelConfig {
  LlamaHParams hparams;    // as read, with head_dim and vocab_size filled in
  TensorNames names{ModelFormat::gguf};
  std::vector<std::string> notes;  // for the user: a context capped at the sliding window
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
  blocks::RopeConfig rope() const;
};

// Checks the hyper-parameters of `weights` (positive, within sane bounds, heads
// divisible for GQA, RoPE settings usable) and fills what is derivable: head_dim
// = n_embd / n_head when absent, vocab_size from token_embd.weight when absent.
// Errors name the source file and the offending value.
Result<ModelConfig> resolve_config(const WeightStore& weights);

}  // namespace tessera::transformer
