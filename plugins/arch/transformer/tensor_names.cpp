#include "tensor_names.hpp"

#include <charconv>

namespace tessera::transformer {

namespace {

struct NamePart {
  std::string_view hf;
  std::string_view gguf;
};
// Per-layer module names after "model.layers.N.".
constexpr NamePart kLayerParts[] = {
    {"self_attn.q_proj", "attn_q"},        {"self_attn.k_proj", "attn_k"},
    {"self_attn.v_proj", "attn_v"},        {"self_attn.o_proj", "attn_output"},
    {"mlp.gate_proj", "ffn_gate"},         {"mlp.up_proj", "ffn_up"},
    {"mlp.down_proj", "ffn_down"},         {"input_layernorm", "attn_norm"},
    {"post_attention_layernorm", "ffn_norm"},
};
constexpr NamePart kGlobalParts[] = {
    {"model.embed_tokens", "token_embd"},
    {"model.norm", "output_norm"},
    {"lm_head", "output"},
};
constexpr std::string_view kLayersPrefix = "model.layers.";

// Splits "module.weight" / "module.bias" into the module and the suffix.
bool split_suffix(std::string_view name, std::string_view& module, std::string_view& suffix) {
  for (std::string_view s : {".weight", ".bias"}) {
    if (name.size() > s.size() && name.substr(name.size() - s.size()) == s) {
      module = name.substr(0, name.size() - s.size());
      suffix = s;
      return true;
    }
  }
  return false;
}

// The Hugging Face module of GGUF module `gguf` in `parts`, or "" when unknown.
template <size_t N>
std::string_view hf_module(const NamePart (&parts)[N], std::string_view gguf) {
  for (const auto& p : parts)
    if (p.gguf == gguf) return p.hf;
  return {};
}

}  // namespace

std::string TensorNames::global(std::string_view gguf_name) const {
  if (format_ == ModelFormat::gguf) return std::string(gguf_name);
  std::string_view module, suffix;
  if (!split_suffix(gguf_name, module, suffix)) return std::string(gguf_name);
  const std::string_view hf = hf_module(kGlobalParts, module);
  return hf.empty() ? std::string(gguf_name) : std::string(hf) + std::string(suffix);
}

std::string TensorNames::layer(int64_t layer, std::string_view gguf_name) const {
  const std::string n = std::to_string(layer);
  if (format_ == ModelFormat::gguf) return "blk." + n + "." + std::string(gguf_name);
  std::string_view module, suffix;
  std::string_view hf;
  if (split_suffix(gguf_name, module, suffix)) hf = hf_module(kLayerParts, module);
  if (hf.empty()) return std::string(kLayersPrefix) + n + "." + std::string(gguf_name);
  return std::string(kLayersPrefix) + n + "." + std::string(hf) + std::string(suffix);
}

std::optional<std::string> gguf_name_of_hf_tensor(std::string_view hf_name) {
  std::string_view module, suffix;
  if (!split_suffix(hf_name, module, suffix)) return std::nullopt;
  for (const auto& p : kGlobalParts)
    if (module == p.hf) return std::string(p.gguf) + std::string(suffix);
  if (module.substr(0, kLayersPrefix.size()) != kLayersPrefix) return std::nullopt;
  module.remove_prefix(kLayersPrefix.size());
  const size_t dot = module.find('.');
  if (dot == std::string_view::npos || dot == 0) return std::nullopt;
  int64_t layer = 0;
  const auto [end, ec] = std::from_chars(module.data(), module.data() + dot, layer);
  if (ec != std::errc() || end != module.data() + dot || layer < 0) return std::nullopt;
  const std::string_view rest = module.substr(dot + 1);
  for (const auto& p : kLayerParts)
    if (rest == p.hf) return "blk." + std::to_string(layer) + "." + std::string(p.gguf) + std::string(suffix);
  return std::nullopt;
}

}  // namespace tessera::transformer
