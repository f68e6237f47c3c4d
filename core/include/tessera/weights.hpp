// tessera/weights.hpp: a model's tensors and hyper-parameters, whatever the file format.
//
// The core opens GGUF files and safetensors directories and presents both as a
// WeightStore: tensors under normalized (GGUF-style) names, hyper-parameters in
// one struct. Architecture plugins read only this interface.
//
// Normalized names (GGUF convention): token_embd.weight, output_norm.weight,
// output.weight, blk.N.{attn_norm,attn_q,attn_k,attn_v,attn_output,ffn_norm,
// ffn_gate,ffn_up,ffn_down}.{weight,bias}.
//
// Thread-safety: read-only after construction; safe to share between threads.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/tensor.hpp"

namespace tessera {

// One stored tensor. `data` points into the memory-mapped file and lives as long
// as the WeightStore. `shape` is row-major (shape[0] outermost): a GGUF tensor
// with ne = {in, out} appears as shape {out, in}.
struct TensorRef {
  std::string name;     // normalized name
  DType dtype = DType::f32;
  std::string format;   // storage format a quant plugin declares: "f32", "f16", "bf16", "ggml.q4_1", ...
  int32_t ndim = 0;
  std::array<int64_t, kMaxDims> shape{};
  const void* data = nullptr;
  uint64_t nbytes = 0;

  int64_t rows() const { return ndim <= 1 ? 1 : numel() / shape[ndim - 1]; }
  int64_t cols() const { return ndim == 0 ? 0 : shape[ndim - 1]; }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= shape[i];
    return ndim == 0 ? 0 : n;
  }
};

// How RoPE pairs dimensions. GGUF "llama" files store Q/K rows permuted for
// adjacent pairs (x[2i], x[2i+1]); Hugging Face checkpoints and GGUF qwen2 use
// the "neox" split halves (x[i], x[i + d/2]).
enum class RopeStyle : uint32_t { adjacent = 0, neox = 1 };
enum class RopeScaling : uint32_t { none = 0, linear = 1, llama3 = 2, yarn = 3 };

// Hyper-parameters, normalized from GGUF metadata or Hugging Face config.json.
struct ModelHParams {
  std::string arch;              // "llama", "qwen2", "mistral", "mamba", ...
  std::string name;              // general.name, for display
  int64_t vocab_size = 0;
  int64_t context_length = 0;    // trained context
  int64_t embedding_length = 0;  // d_model
  int64_t block_count = 0;       // layers
  int64_t feed_forward_length = 0;
  int64_t head_count = 0;
  int64_t head_count_kv = 0;
  int64_t head_dim = 0;          // key/value length per head
  double rms_norm_eps = 1e-5;
  double rope_freq_base = 10000.0;
  RopeStyle rope_style = RopeStyle::adjacent;
  RopeScaling rope_scaling = RopeScaling::none;
  double rope_scaling_factor = 1.0;
  int64_t rope_original_context = 0;   // llama3/yarn: original training context
  double rope_low_freq_factor = 1.0;   // llama3
  double rope_high_freq_factor = 4.0;  // llama3
  bool tied_embeddings = false;        // no output.weight: reuse token_embd.weight
  // Mamba (zero for Transformers).
  int64_t ssm_conv_kernel = 0;
  int64_t ssm_inner_size = 0;
  int64_t ssm_state_size = 0;
  int64_t ssm_time_step_rank = 0;
};

class WeightStore {
 public:
  virtual ~WeightStore() = default;
  virtual const ModelHParams& hparams() const = 0;
  // nullptr when absent.
  virtual const TensorRef* find(std::string_view name) const = 0;
  virtual std::vector<const TensorRef*> tensors() const = 0;
  // The file or folder the weights came from, for messages.
  virtual const std::string& source() const = 0;
};

}  // namespace tessera
