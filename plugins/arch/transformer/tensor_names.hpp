// tensor_names.hpp: where a Llama-family model keeps each weight. The plugin
// names weights the GGUF way ("blk.3.attn_q.weight"); a Hugging Face
// checkpoint stores them as "model.layers.3.self_attn.q_proj.weight".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tessera/weights.hpp"

namespace tessera::transformer {

class TensorNames {
 public:
  explicit TensorNames(ModelFormat format) : format_(format) {}

  // The stored name of a model-wide tensor: "token_embd.weight", "output_norm.weight", "output.weight".
  std::string global(std::string_view gguf_name) const;
  // The stored name of layer `layer`'s tensor: "attn_q.weight", "ffn_down.weight", "attn_k.bias", ...
  std::string layer(int64_t layer, std::string_view gguf_name) const;

 private:
  ModelFormat format_;
};

// Hugging Face -> GGUF naming: "model.layers.0.self_attn.q_proj.weight" ->
// "blk.0.attn_q.weight"; nullopt for names outside the mapping
// (e.g. rotary_emb.inv_freq). For tests and tools.
std::optional<std::string> gguf_name_of_hf_tensor(std::string_view hf_name);

}  // namespace tessera::transformer
