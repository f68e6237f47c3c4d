#include "llama_hparams.hpp"

#include <algorithm>
#include <array>

#include "tessera/blocks/metadata_reader.hpp"

namespace tessera::transformer {

using blocks::MetadataReader;
using blocks::RopeScaling;
using blocks::RopeStyle;

namespace {

constexpr std::string_view kGgufArchitectures[] = {"llama", "mistral", "qwen2", "smollm"};
constexpr std::string_view kSupported[] = {
    "llama", "mistral", "qwen2", "smollm",                                // GGUF (and model_type)
    "LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM",         // Hugging Face
};

// Architectures whose GGUF converters keep Q/K in the split-halves (neox) order.
constexpr std::array<std::string_view, 11> kNeoxArchitectures = {
    "qwen2", "qwen2moe", "qwen3", "phi2", "phi3", "gemma", "gemma2", "stablelm", "gptneox", "falcon", "starcoder2"};

Status parse_scaling_type(std::string_view type, const std::string& where, LlamaHParams& hp) {
  if (type == "linear") hp.rope_scaling = RopeScaling::linear;
  else if (type == "llama3") hp.rope_scaling = RopeScaling::llama3;
  else if (type == "yarn") hp.rope_scaling = RopeScaling::yarn;
  else return Unsupported(where + ": RoPE scaling type '" + std::string(type) + "' is not supported (linear, llama3, yarn are)");
  return Status::Ok();
}

// Tessera's attention kernels let every position attend to all earlier ones.
// A model trained with a sliding window of W positions (Mistral 7B v0.1:
// 4096 of 32768; Qwen2 with use_sliding_window) would, past W tokens, attend
// where it was trained not to: output that differs silently. So the context
// it reports is capped at W, and a longer prompt is refused like any prompt
// longer than the context.
void cap_context_at_sliding_window(LlamaHParams& hp, int64_t window, const std::string& source,
                                   std::vector<std::string>& notes) {
  if (window <= 0 || (hp.context_length > 0 && window >= hp.context_length)) return;
  notes.push_back(source + ": trained with sliding-window attention over " + std::to_string(window) +
                  " positions; Tessera's attention has no window, so the context is limited to " +
                  std::to_string(window) + " (was " + std::to_string(hp.context_length) + ")");
  hp.sliding_window = window;
  hp.trained_context_length = hp.context_length;
  hp.context_length = window;
}

Result<LlamaHParams> read_gguf(const WeightStore& store, std::vector<std::string>& notes) {
  LlamaHParams hp;
  const std::string arch(store.architecture());
  const MetadataReader k(store, arch + ".");
  TESSERA_RETURN_IF_ERROR(k.integer("block_count", hp.block_count, 1));
  TESSERA_RETURN_IF_ERROR(k.integer("embedding_length", hp.embedding_length, 1));
  TESSERA_RETURN_IF_ERROR(k.integer("context_length", hp.context_length, 0, 0));
  TESSERA_RETURN_IF_ERROR(k.integer("feed_forward_length", hp.feed_forward_length, 0, 0));
  TESSERA_RETURN_IF_ERROR(k.integer("attention.head_count", hp.head_count, 1));
  TESSERA_RETURN_IF_ERROR(k.integer("attention.head_count_kv", hp.head_count_kv, 1, hp.head_count));
  TESSERA_RETURN_IF_ERROR(k.integer("attention.key_length", hp.head_dim, 1, 0));
  TESSERA_RETURN_IF_ERROR(k.real("attention.layer_norm_rms_epsilon", hp.rms_norm_eps));
  TESSERA_RETURN_IF_ERROR(k.real("rope.freq_base", hp.rope_freq_base));
  if (const auto type = k.string("rope.scaling.type"); type && *type != "none") {
    TESSERA_RETURN_IF_ERROR(parse_scaling_type(*type, k.where("rope.scaling.type"), hp));
    TESSERA_RETURN_IF_ERROR(k.real("rope.scaling.factor", hp.rope_scaling_factor));
    TESSERA_RETURN_IF_ERROR(k.integer("rope.scaling.original_context_length", hp.rope_original_context, 0, 0));
  }
  int64_t window = 0;  // written by llama.cpp for the architectures whose attention uses it
  TESSERA_RETURN_IF_ERROR(k.integer("attention.sliding_window", window, 0, 0));
  cap_context_at_sliding_window(hp, window, store.source(), notes);

  const bool neox = std::find(kNeoxArchitectures.begin(), kNeoxArchitectures.end(), arch) != kNeoxArchitectures.end();
  hp.rope_style = neox ? RopeStyle::neox : RopeStyle::adjacent;
  if (const size_t n = store.metadata().array_length("tokenizer.ggml.tokens"); n > 0) {
    hp.vocab_size = static_cast<int64_t>(n);
  } else {
    TESSERA_RETURN_IF_ERROR(k.integer("vocab_size", hp.vocab_size, 0, 0));
  }
  hp.tied_embeddings = store.find("output.weight") == nullptr;
  return hp;
}

Status read_hf_rope_scaling(const MetadataReader& r, LlamaHParams& hp) {
  const Metadata& m = r.store().metadata();
  // Flattened: an object becomes "rope_scaling.<field>"; anything else keeps the key.
  const MetaType whole = m.type("rope_scaling");
  if (whole != MetaType::none && whole != MetaType::null)
    return InvalidArgument(r.where("rope_scaling") + " must be an object or null");
  std::optional<std::string_view> type = r.string("rope_scaling.rope_type");
  if (!type) type = r.string("rope_scaling.type");
  if (!type || *type == "default") return Status::Ok();
  TESSERA_RETURN_IF_ERROR(parse_scaling_type(*type, r.where("rope_scaling"), hp));
  TESSERA_RETURN_IF_ERROR(r.real("rope_scaling.factor", hp.rope_scaling_factor));
  double original = 0;
  TESSERA_RETURN_IF_ERROR(r.real("rope_scaling.original_max_position_embeddings", original));
  hp.rope_original_context = static_cast<int64_t>(original);
  TESSERA_RETURN_IF_ERROR(r.real("rope_scaling.low_freq_factor", hp.rope_low_freq_factor));
  TESSERA_RETURN_IF_ERROR(r.real("rope_scaling.high_freq_factor", hp.rope_high_freq_factor));
  if (!(hp.rope_scaling_factor > 0)) return InvalidArgument(r.where("rope_scaling.factor") + " must be positive");
  return Status::Ok();
}

Result<LlamaHParams> read_hf(const WeightStore& store, std::vector<std::string>& notes) {
  LlamaHParams hp;
  const MetadataReader r(store, "");
  TESSERA_RETURN_IF_ERROR(r.integer("num_hidden_layers", hp.block_count, 1));
  TESSERA_RETURN_IF_ERROR(r.integer("hidden_size", hp.embedding_length, 1));
  TESSERA_RETURN_IF_ERROR(r.integer("intermediate_size", hp.feed_forward_length, 1));
  TESSERA_RETURN_IF_ERROR(r.integer("num_attention_heads", hp.head_count, 1));
  TESSERA_RETURN_IF_ERROR(r.integer("num_key_value_heads", hp.head_count_kv, 1, hp.head_count));
  TESSERA_RETURN_IF_ERROR(r.integer("vocab_size", hp.vocab_size, 1));
  TESSERA_RETURN_IF_ERROR(r.integer("max_position_embeddings", hp.context_length, 1));
  TESSERA_RETURN_IF_ERROR(r.integer("head_dim", hp.head_dim, 1, 0));
  hp.rms_norm_eps = 1e-6;  // Hugging Face's default for Llama, Qwen2 and Mistral when the config omits it
  TESSERA_RETURN_IF_ERROR(r.real("rms_norm_eps", hp.rms_norm_eps));
  TESSERA_RETURN_IF_ERROR(r.real("rope_theta", hp.rope_freq_base));
  TESSERA_RETURN_IF_ERROR(r.boolean("tie_word_embeddings", hp.tied_embeddings));
  TESSERA_RETURN_IF_ERROR(read_hf_rope_scaling(r, hp));
  // Mistral v0.1 has "sliding_window": 4096 (later versions null); Qwen2
  // configs carry a window but apply it only with "use_sliding_window".
  int64_t window = 0;
  TESSERA_RETURN_IF_ERROR(r.integer("sliding_window", window, 1, 0));
  const std::string_view arch = store.architecture();
  bool window_used = arch != "Qwen2ForCausalLM" && arch != "qwen2";
  TESSERA_RETURN_IF_ERROR(r.boolean("use_sliding_window", window_used));
  if (window_used) cap_context_at_sliding_window(hp, window, store.source() + "/config.json", notes);
  hp.rope_style = RopeStyle::neox;  // Hugging Face keeps Q/K rows unpermuted (split-halves rotation)
  if (store.find("lm_head.weight") == nullptr) hp.tied_embeddings = true;
  return hp;
}

const char* rope_scaling_name(RopeScaling s) {
  switch (s) {
    case RopeScaling::none: return "none";
    case RopeScaling::linear: return "linear";
    case RopeScaling::llama3: return "llama3";
    case RopeScaling::yarn: return "yarn";
  }
  return "unknown";
}

}  // namespace

std::span<const std::string_view> supported_architectures() { return kSupported; }

Result<LlamaHParams> read_llama_hparams(const WeightStore& store, std::vector<std::string>& notes) {
  const std::string_view arch = store.architecture();
  if (std::find(std::begin(kSupported), std::end(kSupported), arch) == std::end(kSupported))
    return Unsupported(store.source() + ": architecture '" + std::string(arch) +
                       "' is not served by the transformer plugin (it serves llama, mistral, qwen2, smollm and "
                       "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM)");
  if (store.format() == ModelFormat::gguf) {
    if (std::find(std::begin(kGgufArchitectures), std::end(kGgufArchitectures), arch) == std::end(kGgufArchitectures))
      return Unsupported(store.source() + ": '" + std::string(arch) + "' is a Hugging Face name, not a GGUF architecture");
    return read_gguf(store, notes);
  }
  return read_hf(store, notes);
}

std::vector<HyperParameter> describe_llama_hparams(const LlamaHParams& hp) {
  std::vector<HyperParameter> out = {
      {"vocab_size", hp.vocab_size},
      {"context_length", hp.context_length},
      {"embedding_length", hp.embedding_length},
      {"block_count", hp.block_count},
      {"feed_forward_length", hp.feed_forward_length},
      {"head_count", hp.head_count},
      {"head_count_kv", hp.head_count_kv},
      {"head_dim", hp.head_dim},
      {"rms_norm_eps", hp.rms_norm_eps},
      {"rope_freq_base", hp.rope_freq_base},
      {"rope_style", std::string(hp.rope_style == RopeStyle::neox ? "neox" : "adjacent")},
      {"rope_scaling", std::string(rope_scaling_name(hp.rope_scaling))},
      {"tied_embeddings", hp.tied_embeddings},
  };
  if (hp.rope_scaling != RopeScaling::none) {
    out.push_back({"rope_scaling_factor", hp.rope_scaling_factor});
    out.push_back({"rope_original_context", hp.rope_original_context});
  }
  if (hp.sliding_window > 0) out.push_back({"sliding_window", hp.sliding_window});
  return out;
}

}  // namespace tessera::transformer
