// hf_export.hpp: write a GGUF model out as a Hugging Face checkpoint folder, so
// that the safetensors path of the core can be tested on a real model without
// downloading one.
//
// The folder holds what a LlamaForCausalLM checkpoint holds:
//   config.json            hyper-parameters under HF's names
//   model.safetensors      every weight as F32 or BF16 (dequantized through the
//                          quant plugins), HF tensor names, Q/K rows in HF order
//   tokenizer.json         byte-level BPE vocabulary, merges, added tokens,
//                          the pre-tokenizer that GGUF's tokenizer.ggml.pre names
//   tokenizer_config.json  bos/eos/pad/unk, add_bos_token, chat_template
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/gguf.hpp"
#include "model/model_file.hpp"
#include "tessera/quantizer.hpp"
#include "tessera/status.hpp"

namespace tessera::test {

// Q/K projection rows. llama.cpp's converter stores HF's Q/K weights permuted
// so that the two halves of each head become adjacent pairs:
//   gguf = hf.reshape(n_head, 2, head_dim/2, in).swapaxes(1, 2).reshape(hf.shape)
// i.e. gguf row h*D + 2*i + s  <-  hf row h*D + s*D/2 + i  (s in {0, 1}, i < D/2).
// Both functions take a row-major matrix w[rows, cols] with rows = n_head * D
// (D even) and return the reordered copy; an invalid shape gives an empty vector.
std::vector<float> permute_qk_rows(std::span<const float> hf, int64_t rows, int64_t cols, int64_t n_head);
std::vector<float> unpermute_qk_rows(std::span<const float> gguf, int64_t rows, int64_t cols, int64_t n_head);

// The HF name of a normalized (GGUF-style) tensor name: blk.3.attn_q.weight ->
// model.layers.3.self_attn.q_proj.weight; nullopt for names outside the mapping.
std::optional<std::string> hf_tensor_name(std::string_view gguf_name);

// Element type of the exported weights: F32 keeps the dequantized values
// exactly; BF16 is what most published checkpoints hold.
enum class HfWeightType { f32, bf16 };

// What a Llama GGUF file says of its shape ("llama.*" keys), read here
// independently of the transformer plugin.
struct LlamaShape {
  std::string name;
  int64_t embedding_length = 0, feed_forward_length = 0, block_count = 0, head_count = 0, head_count_kv = 0,
          head_dim = 0, context_length = 0, vocab_size = 0;
  double rms_norm_eps = 1e-5, rope_freq_base = 10000.0;
  bool tied_embeddings = false;
};
// Unsupported for a GGUF file that is not a "llama" without RoPE scaling.
Result<LlamaShape> llama_shape(const ModelFile& model);

// config.json of a LlamaForCausalLM of that shape.
Result<nlohmann::json> hf_config_json(const LlamaShape& shape, HfWeightType type = HfWeightType::f32);

// tokenizer.json and tokenizer_config.json from a GGUF "gpt2" tokenizer whose
// tokenizer.ggml.pre is one this exporter can express ("smollm", "gpt-2", "default").
Result<nlohmann::json> hf_tokenizer_json(const GgufFile& gguf);
Result<nlohmann::json> hf_tokenizer_config_json(const GgufFile& gguf);

// Writes the four files above into `dir` (created if needed). `quantizers` are
// the quant plugins that together declare every storage format of `model`.
Status export_hf_folder(const ModelFile& model, const std::vector<std::shared_ptr<Quantizer>>& quantizers,
                        const std::filesystem::path& dir, HfWeightType type = HfWeightType::f32);

// The control for the folder: its F32 weights written back as a GGUF file with
// `original`'s metadata (so rope_style is adjacent again) and the Q/K rows of
// `folder` permuted back into GGUF order. A session on this file runs the same
// numbers as one on the folder, but down the GGUF path.
Status export_f32_gguf(const ModelFile& original, const ModelFile& folder, const std::filesystem::path& file);

}  // namespace tessera::test
