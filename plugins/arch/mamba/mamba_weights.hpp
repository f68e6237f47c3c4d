// mamba_weights.hpp: every weight of a Mamba-1 or Mamba-2 model, checked
// against the hyper-parameters, as Linears (the projections, run by the quant
// plugin of their format) or f32 vectors (norms, convolution, SSM parameters).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "mamba_config.hpp"
#include "tessera/architecture.hpp"
#include "tessera/blocks/embedding_table.hpp"

namespace tessera::mamba {

struct MambaLayerWeights {
  std::vector<float> norm;            // [n_embd] RMSNorm before the mixer
  std::unique_ptr<Linear> in_proj;    // [in_proj_width, n_embd]
  std::vector<float> conv_weight;     // [d_conv, conv_channels]: tap-major (stored [conv_channels, d_conv])
  std::vector<float> conv_bias;       // [conv_channels] (zeros when the file has none)
  std::unique_ptr<Linear> x_proj;     // Mamba-1: [dt_rank + 2 d_state, d_inner]
  std::unique_ptr<Linear> dt_proj;    // Mamba-1: [d_inner, dt_rank] + bias [d_inner]
  std::vector<float> dt_bias;         // Mamba-2: [n_head]
  std::vector<float> a;               // -exp(A_log): Mamba-1 [d_inner, d_state], Mamba-2 [n_head]
  std::vector<float> d;               // skip: Mamba-1 [d_inner], Mamba-2 [n_head]
  std::vector<float> gated_norm;      // Mamba-2: [d_inner]
  std::unique_ptr<Linear> out_proj;   // [n_embd, d_inner]
};

struct MambaWeights {
  blocks::EmbeddingTable token_embd;  // [vocab, n_embd], read by rows
  std::vector<MambaLayerWeights> layers;
  std::vector<float> output_norm;     // [n_embd]
  std::unique_ptr<Linear> output;     // [vocab, n_embd]: the output matrix, or the embedding when tied
  uint64_t weight_bytes = 0;          // bytes one forward reads (every Linear once)
};

// Checks every tensor's presence and shape first, then builds. Tensor names
// are llama.cpp's in a GGUF file (blk.N.ssm_in.weight, blk.N.ssm_a, ...) and
// the transformers modules' in a safetensors folder (backbone.layers.N.mixer.
// in_proj.weight, ...A_log, which is turned into A = -exp(A_log) here as
// llama.cpp's converter does).
Result<MambaWeights> load_mamba_weights(ModelBuilder& builder, const MambaConfig& config);

}  // namespace tessera::mamba
