#include "model/gguf_hparams.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "model/sliding_window.hpp"

namespace tessera {

namespace {

// Architectures whose GGUF converters keep Q/K in the split-halves (neox) order.
constexpr std::array<std::string_view, 11> kNeoxArchitectures = {
    "qwen2", "qwen2moe", "qwen3", "phi2", "phi3", "gemma", "gemma2", "stablelm", "gptneox", "falcon", "starcoder2"};

class KeyReader {
 public:
  KeyReader(const GgufFile& f, std::string arch) : f_(f), prefix_(std::move(arch) + ".") {}

  // A non-negative integer `<arch>.<key>`; absent -> `fallback`; required when fallback < 0.
  Status count(std::string_view key, int64_t& out, int64_t fallback) const {
    const std::string full = prefix_ + std::string(key);
    const GgufValue* v = f_.find(full);
    if (v == nullptr) {
      if (fallback < 0) return InvalidArgument(fmt::format("{}: required metadata '{}' is missing", f_.path(), full));
      out = fallback;
      return Status::Ok();
    }
    const auto i = v->as_int();
    if (!i || *i < 0)
      return InvalidArgument(fmt::format("{}: metadata '{}' must be a non-negative integer", f_.path(), full));
    out = *i;
    return Status::Ok();
  }

  Status real(std::string_view key, double& out) const {
    const std::string full = prefix_ + std::string(key);
    const GgufValue* v = f_.find(full);
    if (v == nullptr) return Status::Ok();
    const auto d = v->as_float();
    if (!d) return InvalidArgument(fmt::format("{}: metadata '{}' must be a number", f_.path(), full));
    out = *d;
    return Status::Ok();
  }

  std::optional<std::string> string(std::string_view key) const { return f_.get_string(prefix_ + std::string(key)); }

 private:
  const GgufFile& f_;
  std::string prefix_;
};

}  // namespace

Result<ModelHParams> hparams_from_gguf(const GgufFile& f) {
  ModelHParams hp;
  hp.arch = f.architecture();
  if (hp.arch.empty()) return InvalidArgument(f.path() + ": metadata 'general.architecture' is missing");
  hp.name = f.get_string("general.name").value_or("");
  const KeyReader k(f, hp.arch);
  const bool mamba = hp.arch == "mamba";

  TESSERA_RETURN_IF_ERROR(k.count("block_count", hp.block_count, -1));
  TESSERA_RETURN_IF_ERROR(k.count("embedding_length", hp.embedding_length, -1));
  TESSERA_RETURN_IF_ERROR(k.count("context_length", hp.context_length, 0));
  TESSERA_RETURN_IF_ERROR(k.count("feed_forward_length", hp.feed_forward_length, 0));
  TESSERA_RETURN_IF_ERROR(k.count("attention.head_count", hp.head_count, mamba ? 0 : -1));
  TESSERA_RETURN_IF_ERROR(k.count("attention.head_count_kv", hp.head_count_kv, hp.head_count));
  if (!mamba && hp.head_count == 0)
    return InvalidArgument(fmt::format("{}: metadata '{}.attention.head_count' is 0", f.path(), hp.arch));
  if (hp.head_count > 0) {
    TESSERA_RETURN_IF_ERROR(k.count("attention.key_length", hp.head_dim, hp.embedding_length / hp.head_count));
    if (hp.head_count_kv == 0 || hp.head_count % hp.head_count_kv != 0)
      return InvalidArgument(fmt::format("{}: attention.head_count {} is not a multiple of attention.head_count_kv {}",
                                         f.path(), hp.head_count, hp.head_count_kv));
  }
  TESSERA_RETURN_IF_ERROR(k.real("attention.layer_norm_rms_epsilon", hp.rms_norm_eps));
  TESSERA_RETURN_IF_ERROR(k.real("rope.freq_base", hp.rope_freq_base));

  if (const auto type = k.string("rope.scaling.type"); type && *type != "none") {
    if (*type == "linear") hp.rope_scaling = RopeScaling::linear;
    else if (*type == "yarn") hp.rope_scaling = RopeScaling::yarn;
    else if (*type == "llama3") hp.rope_scaling = RopeScaling::llama3;
    else return Unsupported(fmt::format("{}: rope scaling type '{}' is not supported", f.path(), *type));
    TESSERA_RETURN_IF_ERROR(k.real("rope.scaling.factor", hp.rope_scaling_factor));
    TESSERA_RETURN_IF_ERROR(k.count("rope.scaling.original_context_length", hp.rope_original_context, 0));
  }
  int64_t window = 0;  // written by llama.cpp for the architectures whose attention uses it
  TESSERA_RETURN_IF_ERROR(k.count("attention.sliding_window", window, 0));
  cap_context_at_sliding_window(hp, window, f.path());

  const bool neox = std::find(kNeoxArchitectures.begin(), kNeoxArchitectures.end(), hp.arch) != kNeoxArchitectures.end();
  hp.rope_style = neox ? RopeStyle::neox : RopeStyle::adjacent;

  if (const auto n = f.array_length("tokenizer.ggml.tokens")) {
    hp.vocab_size = static_cast<int64_t>(*n);
  } else {
    TESSERA_RETURN_IF_ERROR(k.count("vocab_size", hp.vocab_size, 0));
  }
  hp.tied_embeddings = f.find_tensor("output.weight") == nullptr;

  if (mamba) {
    TESSERA_RETURN_IF_ERROR(k.count("ssm.conv_kernel", hp.ssm_conv_kernel, -1));
    TESSERA_RETURN_IF_ERROR(k.count("ssm.inner_size", hp.ssm_inner_size, -1));
    TESSERA_RETURN_IF_ERROR(k.count("ssm.state_size", hp.ssm_state_size, -1));
    TESSERA_RETURN_IF_ERROR(k.count("ssm.time_step_rank", hp.ssm_time_step_rank, -1));
  }
  return hp;
}

}  // namespace tessera
