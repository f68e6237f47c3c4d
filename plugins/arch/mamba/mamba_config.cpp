#include "mamba_config.hpp"

#include <algorithm>
#include <cmath>

#include "tessera/blocks/metadata_reader.hpp"

namespace tessera::mamba {

using blocks::MetadataReader;

namespace {

constexpr std::string_view kSupported[] = {"mamba", "mamba2", "MambaForCausalLM", "Mamba2ForCausalLM"};

// Bounds that keep every buffer size far from overflow; real models sit well inside.
constexpr int64_t kMaxWidth = int64_t{1} << 20;
constexpr int64_t kMaxConv = 64;
constexpr int64_t kMaxState = 4096;

// `where`: MetadataReader::where of the key (the source and the key's name).
Status beyond(const std::string& where, int64_t v, int64_t max) {
  return CorruptData(where + " (" + std::to_string(v) + ") is beyond the supported " + std::to_string(max));
}

Status read_gguf(const WeightStore& store, MambaConfig& c) {
  const std::string arch(store.architecture());
  c.version = arch == "mamba2" ? MambaVersion::mamba2 : MambaVersion::mamba1;
  const MetadataReader k(store, arch + ".");
  TESSERA_RETURN_IF_ERROR(k.integer("block_count", c.n_layer, 1));
  TESSERA_RETURN_IF_ERROR(k.integer("embedding_length", c.n_embd, 1));
  TESSERA_RETURN_IF_ERROR(k.integer("context_length", c.max_context, 1, kDefaultContext));
  TESSERA_RETURN_IF_ERROR(k.integer("ssm.conv_kernel", c.d_conv, 1));
  TESSERA_RETURN_IF_ERROR(k.integer("ssm.inner_size", c.d_inner, 1));
  TESSERA_RETURN_IF_ERROR(k.integer("ssm.state_size", c.d_state, 1));
  // llama.cpp stores Mamba-2's head count as the time-step rank (one dt per head).
  int64_t time_step_rank = 0;
  TESSERA_RETURN_IF_ERROR(k.integer("ssm.time_step_rank", time_step_rank, 1));
  TESSERA_RETURN_IF_ERROR(k.real("attention.layer_norm_rms_epsilon", c.eps));
  if (c.mamba2()) {
    c.n_head = time_step_rank;
    TESSERA_RETURN_IF_ERROR(k.integer("ssm.group_count", c.n_group, 1, 1));
    if (c.d_inner % c.n_head != 0)
      return CorruptData(k.where("ssm.inner_size") + " (" + std::to_string(c.d_inner) +
                         ") is not a multiple of the head count in " + k.where("ssm.time_step_rank") + " (" +
                         std::to_string(c.n_head) + ")");
    c.head_dim = c.d_inner / c.n_head;
  } else {
    c.dt_rank = time_step_rank;
    bool dt_b_c_rms = false;
    TESSERA_RETURN_IF_ERROR(k.boolean("ssm.dt_b_c_rms", dt_b_c_rms));
    if (dt_b_c_rms)
      return Unsupported(k.where("ssm.dt_b_c_rms") +
                         " is true (Falcon-Mamba's RMS norms on dt, B and C), which this plugin does not run");
  }
  c.tied_embeddings = store.find("output.weight") == nullptr;
  return Status::Ok();
}

// Mamba2Config's time_step_limit: [low, high] with 0 <= low <= high (high
// may be inf: config.json spells it as Python or transformers 5 writes it,
// model/hf_json.hpp); absent or null leaves no clamp.
Status read_time_step_limit(const WeightStore& store, const MetadataReader& r, MambaConfig& c) {
  const Metadata& meta = store.metadata();
  constexpr std::string_view key = "time_step_limit";
  const MetaType type = meta.type(key);
  if (type == MetaType::null) return Status::Ok();
  if (type == MetaType::none) {
    // An object, or a list holding objects or lists, is flattened into dotted
    // keys (model/metadata.hpp): present, but no list of two numbers.
    for (size_t i = 0; i < meta.size(); ++i)
      if (meta.key(i).starts_with("time_step_limit."))
        return CorruptData(r.where(key) + " must be two numbers [low, high] with 0 <= low <= high");
    return Status::Ok();
  }
  const std::optional<double> low = meta.get_real(key, 0), high = meta.get_real(key, 1);
  if (meta.array_length(key) != 2 || !low || !high || !(*low >= 0.0) || !(*high >= *low))
    return CorruptData(r.where(key) + " must be two numbers [low, high] with 0 <= low <= high");
  c.dt_min = *low;
  c.dt_max = *high;
  return Status::Ok();
}

Status read_hf(const WeightStore& store, MambaConfig& c) {
  c.version = store.architecture() == "Mamba2ForCausalLM" ? MambaVersion::mamba2 : MambaVersion::mamba1;
  const MetadataReader r(store, "");
  TESSERA_RETURN_IF_ERROR(r.integer("num_hidden_layers", c.n_layer, 1));
  TESSERA_RETURN_IF_ERROR(r.integer("hidden_size", c.n_embd, 1));
  // Factors are bounded before they are multiplied: a config.json may hold anything.
  if (c.n_embd > kMaxWidth) return beyond(r.where("hidden_size"), c.n_embd, kMaxWidth);
  c.max_context = kDefaultContext;
  TESSERA_RETURN_IF_ERROR(r.integer("conv_kernel", c.d_conv, 1, 4));
  TESSERA_RETURN_IF_ERROR(r.integer("state_size", c.d_state, 1, c.mamba2() ? 128 : 16));
  int64_t expand = 2;
  TESSERA_RETURN_IF_ERROR(r.integer("expand", expand, 1, 2));
  if (expand > kMaxWidth) return beyond(r.where("expand"), expand, kMaxWidth);
  TESSERA_RETURN_IF_ERROR(r.integer("intermediate_size", c.d_inner, 1, expand * c.n_embd));
  TESSERA_RETURN_IF_ERROR(r.real("layer_norm_epsilon", c.eps));
  TESSERA_RETURN_IF_ERROR(r.boolean("use_bias", c.in_proj_bias));
  c.out_proj_bias = c.in_proj_bias;
  c.tied_embeddings = !c.mamba2();  // the configs' defaults: MambaConfig ties, Mamba2Config does not
  TESSERA_RETURN_IF_ERROR(r.boolean("tie_word_embeddings", c.tied_embeddings));
  if (store.find("lm_head.weight") == nullptr) c.tied_embeddings = true;
  if (c.mamba2()) {
    TESSERA_RETURN_IF_ERROR(r.integer("num_heads", c.n_head, 1, 128));
    TESSERA_RETURN_IF_ERROR(r.integer("head_dim", c.head_dim, 1, 64));
    TESSERA_RETURN_IF_ERROR(r.integer("n_groups", c.n_group, 1, 8));
    if (c.n_head > kMaxWidth) return beyond(r.where("num_heads"), c.n_head, kMaxWidth);
    if (c.head_dim > kMaxWidth) return beyond(r.where("head_dim"), c.head_dim, kMaxWidth);
    if (c.n_head * c.head_dim != c.d_inner)
      return CorruptData(r.where("num_heads") + " * head_dim (" + std::to_string(c.n_head) + " * " +
                         std::to_string(c.head_dim) + ") differs from the mixer width expand * hidden_size (" +
                         std::to_string(c.d_inner) + ")");
    TESSERA_RETURN_IF_ERROR(read_time_step_limit(store, r, c));
  } else if (r.string("time_step_rank") == "auto") {
    c.dt_rank = (c.n_embd + 15) / 16;  // MambaConfig's rule for "auto"
  } else {
    TESSERA_RETURN_IF_ERROR(r.integer("time_step_rank", c.dt_rank, 1, (c.n_embd + 15) / 16));
  }
  return Status::Ok();
}

Status check(const WeightStore& store, MambaConfig& c) {
  const std::string& src = store.source();
  const auto too_large = [&](const char* what, int64_t v, int64_t max) {
    return CorruptData(src + ": " + what + " " + std::to_string(v) + " is beyond the supported " + std::to_string(max));
  };
  if (c.n_embd > kMaxWidth) return too_large("embedding width", c.n_embd, kMaxWidth);
  if (c.d_inner > kMaxWidth) return too_large("mixer width", c.d_inner, kMaxWidth);
  if (c.d_state > kMaxState) return too_large("state size", c.d_state, kMaxState);
  if (c.d_conv > kMaxConv) return too_large("convolution width", c.d_conv, kMaxConv);
  if (c.n_layer > 4096) return too_large("layer count", c.n_layer, 4096);
  if (c.d_conv < 2)
    return Unsupported(src + ": a convolution of width " + std::to_string(c.d_conv) + " (at least 2 is supported)");
  if (c.mamba2()) {
    if (c.n_head % c.n_group != 0)
      return CorruptData(src + ": " + std::to_string(c.n_head) + " heads do not split into " +
                         std::to_string(c.n_group) + " groups");
  } else if (c.dt_rank > c.d_inner) {
    return CorruptData(src + ": time-step rank " + std::to_string(c.dt_rank) + " exceeds the mixer width " +
                       std::to_string(c.d_inner));
  }
  if (!(c.eps > 0) || !std::isfinite(c.eps)) return CorruptData(src + ": RMSNorm epsilon must be positive");
  // The vocabulary is the embedding table's rows (llama.cpp's converter pads it
  // to a multiple of 8 or 16; the table holds the padded rows).
  const std::string embd = c.format == ModelFormat::gguf ? "token_embd.weight" : "backbone.embeddings.weight";
  const TensorRef* t = store.find(embd);
  if (t == nullptr) return NotFound(src + ": tensor " + embd + " is missing");
  if (t->ndim != 2) return CorruptData(src + ": tensor " + embd + " is not a matrix");
  c.vocab = t->shape[0];
  return Status::Ok();
}

}  // namespace

std::span<const std::string_view> supported_architectures() { return kSupported; }

Result<MambaConfig> read_mamba_config(const WeightStore& store) {
  const std::string_view arch = store.architecture();
  if (std::find(std::begin(kSupported), std::end(kSupported), arch) == std::end(kSupported))
    return Unsupported(store.source() + ": architecture '" + std::string(arch) +
                       "' is not served by the mamba plugin (it serves mamba, mamba2, MambaForCausalLM, "
                       "Mamba2ForCausalLM)");
  MambaConfig c;
  c.format = store.format();
  const bool gguf_name = arch == "mamba" || arch == "mamba2";
  if (c.format == ModelFormat::gguf && !gguf_name)
    return Unsupported(store.source() + ": '" + std::string(arch) +
                       "' is a Hugging Face name, not a GGUF architecture");
  TESSERA_RETURN_IF_ERROR(c.format == ModelFormat::gguf ? read_gguf(store, c) : read_hf(store, c));
  TESSERA_RETURN_IF_ERROR(check(store, c));
  return c;
}

std::vector<HyperParameter> describe_mamba_config(const MambaConfig& c) {
  std::vector<HyperParameter> out = {
      {"ssm_version", static_cast<int64_t>(c.version)},
      {"vocab_size", c.vocab},
      {"context_length", c.max_context},
      {"embedding_length", c.n_embd},
      {"block_count", c.n_layer},
      {"ssm_inner_size", c.d_inner},
      {"ssm_state_size", c.d_state},
      {"ssm_conv_kernel", c.d_conv},
  };
  if (c.mamba2()) {
    out.push_back({"ssm_head_count", c.n_head});
    out.push_back({"ssm_head_dim", c.head_dim});
    out.push_back({"ssm_group_count", c.n_group});
    // time_step_limit, where it clamps (an infinite end is left out: JSON has no infinity).
    if (c.dt_min > 0.0) out.push_back({"ssm_dt_min", c.dt_min});
    if (std::isfinite(c.dt_max)) out.push_back({"ssm_dt_max", c.dt_max});
  } else {
    out.push_back({"ssm_time_step_rank", c.dt_rank});
  }
  out.push_back({"rms_norm_eps", c.eps});
  out.push_back({"tied_embeddings", c.tied_embeddings});
  out.push_back({"state_bytes_per_seq",
                 static_cast<int64_t>((c.conv_state_elements() + c.ssm_state_elements()) * sizeof(float) * c.n_layer)});
  return out;
}

}  // namespace tessera::mamba
