// llama_hparams.hpp: the hyper-parameters of a Llama-family model, read from
// a GGUF file's "<arch>.*" keys or a Hugging Face config.json.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/architecture.hpp"
#include "tessera/blocks/rope.hpp"
#include "tessera/status.hpp"
#include "tessera/weights.hpp"

namespace tessera::transformer {

// The model kinds this plugin serves: GGUF general.architecture values, then
// Hugging Face architectures names (and the model_type of configs without one).
std::span<const std::string_view> supported_architectures();

struct LlamaHParams {
  int64_t vocab_size = 0;        // 0 when the file does not say (then token_embd's rows)
  int64_t context_length = 0;    // trained context, capped at a sliding window
  int64_t embedding_length = 0;  // d_model
  int64_t block_count = 0;       // layers
  int64_t feed_forward_length = 0;
  int64_t head_count = 0;
  int64_t head_count_kv = 0;
  int64_t head_dim = 0;          // 0 when the file does not say (then embedding_length / head_count)
  double rms_norm_eps = 1e-5;
  double rope_freq_base = 10000.0;
  blocks::RopeStyle rope_style = blocks::RopeStyle::adjacent;
  blocks::RopeScaling rope_scaling = blocks::RopeScaling::none;
  double rope_scaling_factor = 1.0;
  int64_t rope_original_context = 0;   // llama3/yarn: original training context
  double rope_low_freq_factor = 1.0;   // llama3
  double rope_high_freq_factor = 4.0;  // llama3
  bool tied_embeddings = false;        // no separate output matrix: token_embd serves
  int64_t sliding_window = 0;          // the window it was trained with; 0 = none
  int64_t trained_context_length = 0;  // context_length before the window capped it; 0 = not capped
};

// Reads the hyper-parameters of `store` (GGUF or Hugging Face). What the
// user should know (a context capped at the sliding window) goes to `notes`.
// Errors name the file and the key.
Result<LlamaHParams> read_llama_hparams(const WeightStore& store, std::vector<std::string>& notes);

// For `tessera inspect`.
std::vector<HyperParameter> describe_llama_hparams(const LlamaHParams& hp);

}  // namespace tessera::transformer
