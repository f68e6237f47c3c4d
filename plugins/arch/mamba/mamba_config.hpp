// mamba_config.hpp: the hyper-parameters of a Mamba-1 or Mamba-2 model, read
// from a GGUF file (llama.cpp's "mamba"/"mamba2" keys) or a Hugging Face
// config.json (MambaForCausalLM / Mamba2ForCausalLM), checked and completed.
//
// The two generations share the block: x += out_proj(mixer(norm(x))), where
// the mixer projects the input, runs a causal depthwise convolution and a
// selective state-space scan, and gates the result:
//  * Mamba-1: in_proj -> [x | z] (d_inner each); conv over x; x_proj -> [dt
//    (dt_rank) | B (d_state) | C (d_state)]; dt_proj widens dt to d_inner;
//    every channel keeps a state of d_state values with its own A row.
//  * Mamba-2: in_proj -> [z (d_inner) | xBC (d_inner + 2 n_group d_state) |
//    dt (n_head)]; conv over xBC; a scalar A and dt per head of head_dim
//    channels, B and C shared by the heads of a group; the gated output is
//    RMS-normed per group before out_proj.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/architecture.hpp"
#include "tessera/status.hpp"
#include "tessera/weights.hpp"

namespace tessera::mamba {

enum class MambaVersion : int { mamba1 = 1, mamba2 = 2 };

struct MambaConfig {
  MambaVersion version = MambaVersion::mamba1;
  ModelFormat format = ModelFormat::gguf;
  int64_t n_embd = 0;       // d_model
  int64_t n_layer = 0;
  int64_t vocab = 0;
  int64_t max_context = 0;  // a recurrent model has no trained limit; the file's value, or kDefaultContext
  int64_t d_inner = 0;      // channels of the mixer (expand * d_model)
  int64_t d_state = 0;      // N: state values per channel (Mamba-1) or per head channel (Mamba-2)
  int64_t d_conv = 0;       // width of the causal convolution window
  int64_t dt_rank = 0;      // Mamba-1: width of the time-step projection's input
  int64_t n_head = 0;       // Mamba-2: heads of head_dim channels, one A and dt each
  int64_t head_dim = 0;     // Mamba-2
  int64_t n_group = 1;      // Mamba-2: groups of heads sharing B and C
  double eps = 1e-5;        // of every RMSNorm
  // Mamba-2: dt is clamped to [dt_min, dt_max] after softplus (Hugging Face's
  // time_step_limit; the default is no clamp, and GGUF files carry none).
  double dt_min = 0.0;
  double dt_max = std::numeric_limits<double>::infinity();
  bool tied_embeddings = false;
  bool in_proj_bias = false;   // Hugging Face use_bias
  bool out_proj_bias = false;

  bool mamba2() const { return version == MambaVersion::mamba2; }
  // Channels the convolution runs over: x (Mamba-1), x, B and C (Mamba-2).
  int64_t conv_channels() const { return mamba2() ? d_inner + 2 * n_group * d_state : d_inner; }
  // Output width of in_proj.
  int64_t in_proj_width() const { return mamba2() ? 2 * d_inner + 2 * n_group * d_state + n_head : 2 * d_inner; }
  // Mamba-1: output width of x_proj.
  int64_t x_proj_width() const { return dt_rank + 2 * d_state; }
  // Per sequence and layer: the last d_conv - 1 convolution inputs, and the SSM state.
  uint64_t conv_state_elements() const { return static_cast<uint64_t>((d_conv - 1) * conv_channels()); }
  uint64_t ssm_state_elements() const { return static_cast<uint64_t>(d_inner * d_state); }
};

// What llama.cpp's converter writes as the context of a recurrent model, used
// when a file gives none (a Hugging Face config has no such key).
inline constexpr int64_t kDefaultContext = int64_t{1} << 20;

// GGUF general.architecture values and Hugging Face architectures served.
std::span<const std::string_view> supported_architectures();

// Reads and checks the hyper-parameters (errors name the file and the key).
Result<MambaConfig> read_mamba_config(const WeightStore& weights);

// For `tessera inspect`.
std::vector<HyperParameter> describe_mamba_config(const MambaConfig& config);

}  // namespace tessera::mamba
