#include "model/hf_config.hpp"

#include <charconv>

#include <fmt/format.h>

#include "model/sliding_window.hpp"

namespace tessera {

using nlohmann::json;

namespace {

struct ArchName {
  std::string_view hf;
  std::string_view arch;
};
constexpr ArchName kArchitectures[] = {
    {"LlamaForCausalLM", "llama"},
    {"Qwen2ForCausalLM", "qwen2"},
    {"MistralForCausalLM", "mistral"},
};

// Reads config fields with messages that name the file and the key.
class ConfigReader {
 public:
  ConfigReader(const json& j, const std::string& source) : j_(j), source_(source) {}

  Status positive_int(const char* key, int64_t& out, std::optional<int64_t> fallback = std::nullopt) {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) {
      if (fallback) {
        out = *fallback;
        return Status::Ok();
      }
      return InvalidArgument(fmt::format("{}: required key '{}' is missing", source_, key));
    }
    if (!it->is_number_integer() || it->get<int64_t>() <= 0)
      return InvalidArgument(fmt::format("{}: '{}' must be a positive integer, found {}", source_, key, it->dump()));
    out = it->get<int64_t>();
    return Status::Ok();
  }

  Status number(const json& obj, const char* key, double& out, std::string_view where = "") const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return Status::Ok();  // keep the default
    if (!it->is_number())
      return InvalidArgument(fmt::format("{}: '{}{}' must be a number, found {}", source_, where, key, it->dump()));
    out = it->get<double>();
    return Status::Ok();
  }

  Status boolean(const char* key, bool& out) const {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return Status::Ok();
    if (!it->is_boolean()) return InvalidArgument(fmt::format("{}: '{}' must be true or false", source_, key));
    out = it->get<bool>();
    return Status::Ok();
  }

 private:
  const json& j_;
  const std::string& source_;
};

Status read_rope_scaling(const json& config, const std::string& source, ModelHParams& hp, ConfigReader& r) {
  auto it = config.find("rope_scaling");
  if (it == config.end() || it->is_null()) return Status::Ok();
  const json& rs = *it;
  if (!rs.is_object()) return InvalidArgument(source + ": 'rope_scaling' must be an object or null");
  std::string type;
  for (const char* k : {"rope_type", "type"}) {
    if (rs.contains(k) && rs[k].is_string()) {
      type = rs[k].get<std::string>();
      break;
    }
  }
  if (type == "default" || type.empty()) return Status::Ok();
  if (type == "linear") {
    hp.rope_scaling = RopeScaling::linear;
  } else if (type == "llama3") {
    hp.rope_scaling = RopeScaling::llama3;
  } else if (type == "yarn") {
    hp.rope_scaling = RopeScaling::yarn;
  } else {
    return Unsupported(fmt::format("{}: rope_scaling type '{}' is not supported (linear, llama3, yarn are)", source, type));
  }
  TESSERA_RETURN_IF_ERROR(r.number(rs, "factor", hp.rope_scaling_factor, "rope_scaling."));
  double orig = 0;
  TESSERA_RETURN_IF_ERROR(r.number(rs, "original_max_position_embeddings", orig, "rope_scaling."));
  hp.rope_original_context = static_cast<int64_t>(orig);
  TESSERA_RETURN_IF_ERROR(r.number(rs, "low_freq_factor", hp.rope_low_freq_factor, "rope_scaling."));
  TESSERA_RETURN_IF_ERROR(r.number(rs, "high_freq_factor", hp.rope_high_freq_factor, "rope_scaling."));
  if (hp.rope_scaling_factor <= 0)
    return InvalidArgument(fmt::format("{}: rope_scaling.factor must be positive", source));
  return Status::Ok();
}

}  // namespace

Result<ModelHParams> hparams_from_hf_config(const json& config, const std::string& source) {
  if (!config.is_object()) return InvalidArgument(source + ": not a JSON object");
  ModelHParams hp;
  std::string hf_arch;
  if (auto it = config.find("architectures"); it != config.end() && it->is_array() && !it->empty() &&
                                              (*it)[0].is_string())
    hf_arch = (*it)[0].get<std::string>();
  for (const auto& a : kArchitectures)
    if (a.hf == hf_arch) hp.arch = a.arch;
  // Older configs omit "architectures"; their "model_type" names the same family.
  if (hf_arch.empty()) {
    if (auto it = config.find("model_type"); it != config.end() && it->is_string()) {
      const std::string type = it->get<std::string>();
      for (const auto& a : kArchitectures)
        if (type == a.arch) hp.arch = a.arch;
      hf_arch = "model_type " + type;
    }
  }
  if (hp.arch.empty())
    return Unsupported(fmt::format("{}: architecture '{}' is not supported (LlamaForCausalLM, Qwen2ForCausalLM, "
                                   "MistralForCausalLM are)", source, hf_arch));
  if (auto it = config.find("_name_or_path"); it != config.end() && it->is_string()) hp.name = it->get<std::string>();

  ConfigReader r(config, source);
  TESSERA_RETURN_IF_ERROR(r.positive_int("num_hidden_layers", hp.block_count));
  TESSERA_RETURN_IF_ERROR(r.positive_int("hidden_size", hp.embedding_length));
  TESSERA_RETURN_IF_ERROR(r.positive_int("intermediate_size", hp.feed_forward_length));
  TESSERA_RETURN_IF_ERROR(r.positive_int("num_attention_heads", hp.head_count));
  TESSERA_RETURN_IF_ERROR(r.positive_int("num_key_value_heads", hp.head_count_kv, hp.head_count));
  TESSERA_RETURN_IF_ERROR(r.positive_int("vocab_size", hp.vocab_size));
  TESSERA_RETURN_IF_ERROR(r.positive_int("max_position_embeddings", hp.context_length));
  if (!config.contains("head_dim") || config["head_dim"].is_null()) {
    if (hp.embedding_length % hp.head_count != 0)
      return InvalidArgument(fmt::format("{}: hidden_size {} is not divisible by num_attention_heads {}", source,
                                         hp.embedding_length, hp.head_count));
  }
  TESSERA_RETURN_IF_ERROR(r.positive_int("head_dim", hp.head_dim, hp.embedding_length / hp.head_count));
  if (hp.head_count % hp.head_count_kv != 0)
    return InvalidArgument(fmt::format("{}: num_attention_heads {} is not a multiple of num_key_value_heads {}",
                                       source, hp.head_count, hp.head_count_kv));
  hp.rms_norm_eps = 1e-6;  // Hugging Face's default for Llama, Qwen2 and Mistral when the config omits it
  TESSERA_RETURN_IF_ERROR(r.number(config, "rms_norm_eps", hp.rms_norm_eps));
  TESSERA_RETURN_IF_ERROR(r.number(config, "rope_theta", hp.rope_freq_base));
  TESSERA_RETURN_IF_ERROR(r.boolean("tie_word_embeddings", hp.tied_embeddings));
  TESSERA_RETURN_IF_ERROR(read_rope_scaling(config, source, hp, r));
  // Mistral v0.1 has "sliding_window": 4096 (later versions null); Qwen2
  // configs carry a window but apply it only with "use_sliding_window".
  int64_t window = 0;
  TESSERA_RETURN_IF_ERROR(r.positive_int("sliding_window", window, 0));
  bool window_used = hp.arch != "qwen2";
  TESSERA_RETURN_IF_ERROR(r.boolean("use_sliding_window", window_used));
  if (window_used) cap_context_at_sliding_window(hp, window, source);
  hp.rope_style = RopeStyle::neox;  // HF keeps Q/K rows unpermuted (split-halves rotation)
  return hp;
}

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

}  // namespace

std::optional<std::string> normalize_hf_tensor_name(std::string_view hf_name) {
  std::string_view module, suffix;
  if (!split_suffix(hf_name, module, suffix)) return std::nullopt;
  for (const auto& p : kGlobalParts)
    if (module == p.hf) return std::string(p.gguf) + std::string(suffix);
  constexpr std::string_view kLayers = "model.layers.";
  if (module.substr(0, kLayers.size()) != kLayers) return std::nullopt;
  module.remove_prefix(kLayers.size());
  const size_t dot = module.find('.');
  if (dot == std::string_view::npos || dot == 0) return std::nullopt;
  int64_t layer = 0;
  const auto [end, ec] = std::from_chars(module.data(), module.data() + dot, layer);
  if (ec != std::errc() || end != module.data() + dot || layer < 0) return std::nullopt;
  const std::string_view rest = module.substr(dot + 1);
  for (const auto& p : kLayerParts)
    if (rest == p.hf) return fmt::format("blk.{}.{}{}", layer, p.gguf, suffix);
  return std::nullopt;
}

}  // namespace tessera
