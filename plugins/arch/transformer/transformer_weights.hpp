// transformer_weights.hpp: every weight of a Llama-family model, checked against
// the hyper-parameters and turned into Linears (matrices) or f32 vectors (norms).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model_config.hpp"
#include "tessera/architecture.hpp"
#include "tessera/blocks/embedding_table.hpp"

namespace tessera::transformer {

struct LayerWeights {
  std::vector<float> attn_norm;       // [n_embd]
  std::unique_ptr<Linear> attn_q;     // [q_dim, n_embd] (+ bias [q_dim] for qwen2)
  std::unique_ptr<Linear> attn_k;     // [kv_dim, n_embd] (+ bias)
  std::unique_ptr<Linear> attn_v;     // [kv_dim, n_embd] (+ bias)
  std::unique_ptr<Linear> attn_output;// [n_embd, q_dim]
  std::vector<float> ffn_norm;        // [n_embd]
  std::unique_ptr<Linear> ffn_gate;   // [n_ff, n_embd]
  std::unique_ptr<Linear> ffn_up;     // [n_ff, n_embd]
  std::unique_ptr<Linear> ffn_down;   // [n_embd, n_ff]
};

struct TransformerWeights {
  blocks::EmbeddingTable token_embd;             // [vocab, n_embd], read by rows
  std::vector<LayerWeights> layers;       // [n_layer]
  std::vector<float> output_norm;         // [n_embd]
  std::unique_ptr<Linear> output;         // [vocab, n_embd]: output.weight, or token_embd.weight when tied
  bool tied_output = false;
  uint64_t weight_bytes = 0;              // bytes one forward reads (every Linear once)
};

// Checks every tensor's presence and shape first (so a bad file fails before any
// kernel is made), then builds the Linears and dequantizes the norms.
// The output matrix is output.weight when the file has it, else token_embd.weight
// (by the file's own names: lm_head.weight, model.embed_tokens.weight in a
// Hugging Face checkpoint).
Result<TransformerWeights> load_weights(ModelBuilder& builder, const ModelConfig& config);

}  // namespace tessera::transformer
