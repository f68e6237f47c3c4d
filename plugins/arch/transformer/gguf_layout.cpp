#include "gguf_layout.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <tuple>
#include <utility>

#include "model_config.hpp"
#include "tensor_names.hpp"

namespace tessera::transformer {
namespace {

using blocks::RopeScaling;

// What llama.cpp's converter names each Hugging Face architecture in GGUF.
Result<std::string> gguf_architecture(std::string_view hf) {
  if (hf == "LlamaForCausalLM" || hf == "llama" || hf == "MistralForCausalLM" || hf == "mistral") return std::string("llama");
  if (hf == "Qwen2ForCausalLM" || hf == "qwen2") return std::string("qwen2");
  return Unsupported("architecture '" + std::string(hf) + "' has no GGUF name in the transformer plugin");
}

// GGUF's order of a layer's tensors: the order llama.cpp's files keep.
constexpr std::array<std::string_view, 9> kLayerOrder = {"attn_norm", "attn_q",   "attn_k", "attn_v", "attn_output",
                                                         "ffn_norm",  "ffn_gate", "ffn_up", "ffn_down"};

// Sort key of a GGUF tensor name: the embedding, the layers in order, the final norm, the head.
std::tuple<int, int64_t, size_t, bool> file_position(std::string_view name) {
  if (name.starts_with("token_embd.")) return {0, 0, 0, false};
  if (name.starts_with("output_norm.")) return {2, 0, 0, false};
  if (name.starts_with("output.")) return {3, 0, 0, false};
  // "blk.N.part.weight" / ".bias", as gguf_name_of_hf_tensor writes them.
  const size_t first_dot = name.find('.');
  const size_t second_dot = name.find('.', first_dot + 1);
  if (first_dot == std::string_view::npos || second_dot == std::string_view::npos) return {4, 0, 0, false};
  int64_t layer = 0;
  std::from_chars(name.data() + first_dot + 1, name.data() + second_dot, layer);
  const std::string_view rest = name.substr(second_dot + 1);
  const std::string_view part = rest.substr(0, rest.find('.'));
  const size_t rank = std::find(kLayerOrder.begin(), kLayerOrder.end(), part) - kLayerOrder.begin();
  return {1, layer, rank, rest.ends_with(".bias")};
}

Status add_u32(GgufLayout& out, const std::string& key, int64_t value, const std::string& source) {
  if (value < 0 || value > std::numeric_limits<uint32_t>::max())
    return InvalidArgument(source + ": " + key + " = " + std::to_string(value) + " does not fit GGUF's uint32");
  out.metadata.push_back({key, static_cast<uint32_t>(value)});
  return Status::Ok();
}

}  // namespace

Result<GgufLayout> gguf_layout_of(const WeightStore& weights) {
  if (weights.format() == ModelFormat::gguf)
    return InvalidArgument(weights.source() + " is a GGUF file already");
  auto config = resolve_config(weights);
  if (!config.ok()) return config.status();
  const LlamaHParams& hp = config->hparams;
  auto arch = gguf_architecture(weights.architecture());
  if (!arch.ok()) return Unsupported(weights.source() + ": " + arch.status().message());
  if (hp.rope_scaling == RopeScaling::llama3)
    return Unsupported(weights.source() +
                       ": llama3 RoPE scaling is stored in GGUF as a tensor of per-frequency factors, which this "
                       "converter does not compute");

  GgufLayout out;
  out.architecture = *arch;
  const std::string k = out.architecture + ".";
  const std::string& source = weights.source();
  // The context it was trained with; a sliding window goes in its own key,
  // from which Tessera caps the context again (llama.cpp ignores it for llama).
  const int64_t context = hp.trained_context_length > 0 ? hp.trained_context_length : hp.context_length;
  TESSERA_RETURN_IF_ERROR(add_u32(out, k + "context_length", context, source));
  TESSERA_RETURN_IF_ERROR(add_u32(out, k + "embedding_length", config->n_embd, source));
  TESSERA_RETURN_IF_ERROR(add_u32(out, k + "block_count", config->n_layer, source));
  TESSERA_RETURN_IF_ERROR(add_u32(out, k + "feed_forward_length", config->n_ff, source));
  TESSERA_RETURN_IF_ERROR(add_u32(out, k + "attention.head_count", config->n_head, source));
  TESSERA_RETURN_IF_ERROR(add_u32(out, k + "attention.head_count_kv", config->n_kv_head, source));
  if (config->head_dim * config->n_head != config->n_embd) {
    TESSERA_RETURN_IF_ERROR(add_u32(out, k + "attention.key_length", config->head_dim, source));
    TESSERA_RETURN_IF_ERROR(add_u32(out, k + "attention.value_length", config->head_dim, source));
  }
  TESSERA_RETURN_IF_ERROR(add_u32(out, k + "rope.dimension_count", config->head_dim, source));
  out.metadata.push_back({k + "rope.freq_base", static_cast<float>(hp.rope_freq_base)});
  out.metadata.push_back({k + "attention.layer_norm_rms_epsilon", static_cast<float>(hp.rms_norm_eps)});
  TESSERA_RETURN_IF_ERROR(add_u32(out, k + "vocab_size", config->vocab, source));
  if (hp.rope_scaling != RopeScaling::none) {
    out.metadata.push_back({k + "rope.scaling.type", std::string(hp.rope_scaling == RopeScaling::linear ? "linear" : "yarn")});
    out.metadata.push_back({k + "rope.scaling.factor", static_cast<float>(hp.rope_scaling_factor)});
    if (hp.rope_original_context > 0)
      TESSERA_RETURN_IF_ERROR(add_u32(out, k + "rope.scaling.original_context_length", hp.rope_original_context, source));
  }
  if (hp.sliding_window > 0)
    TESSERA_RETURN_IF_ERROR(add_u32(out, k + "attention.sliding_window", hp.sliding_window, source));

  // llama.cpp's llama-style architectures rotate adjacent pairs, so their
  // GGUF files hold each Q/K head's two halves interleaved; qwen2 rotates
  // split halves, as Hugging Face stores them.
  const bool interleave = out.architecture == "llama";
  for (const TensorRef& t : weights.tensors()) {
    auto name = gguf_name_of_hf_tensor(t.name);
    if (!name) {
      if (t.name.ends_with("rotary_emb.inv_freq")) {
        out.notes.push_back(t.name + " left out: RoPE's frequencies follow from the hyper-parameters");
        continue;
      }
      return Unsupported(source + ": tensor '" + t.name + "' has no GGUF name in the transformer plugin");
    }
    GgufTensorPlan plan{*name, t.name, 0};
    if (interleave && (name->starts_with("blk.") && (name->find(".attn_q.") != std::string::npos ||
                                                     name->find(".attn_k.") != std::string::npos))) {
      plan.interleave_heads = name->find(".attn_q.") != std::string::npos ? config->n_head : config->n_kv_head;
      if (t.ndim < 1 || t.shape[0] != plan.interleave_heads * config->head_dim || config->head_dim % 2 != 0)
        return InvalidArgument(source + ": " + t.name + " has " + std::to_string(t.ndim >= 1 ? t.shape[0] : 0) +
                               " rows, not " + std::to_string(plan.interleave_heads) + " heads of an even " +
                               std::to_string(config->head_dim));
    }
    out.tensors.push_back(std::move(plan));
  }
  // Names are unique: a total order.
  std::sort(out.tensors.begin(), out.tensors.end(), [](const GgufTensorPlan& a, const GgufTensorPlan& b) {
    return std::pair(file_position(a.name), a.name) < std::pair(file_position(b.name), b.name);
  });
  return out;
}

}  // namespace tessera::transformer
