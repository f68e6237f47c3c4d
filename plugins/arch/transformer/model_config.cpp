#include "model_config.hpp"

#include <algorithm>

#include "tessera/blocks/rope.hpp"

namespace tessera::transformer {

namespace {

// Upper bounds well above any released Llama-family model; they keep a corrupt
// header from sizing buffers with absurd numbers before the tensor shapes are checked.
constexpr int64_t kMaxWidth = int64_t{1} << 20;    // n_embd, n_ff, q/kv widths
constexpr int64_t kMaxLayers = 4096;
constexpr int64_t kMaxHeads = 4096;
constexpr int64_t kMaxVocab = int64_t{1} << 24;
constexpr int64_t kMaxContext = int64_t{1} << 24;

Status check_range(const std::string& source, const char* what, int64_t value, int64_t max) {
  if (value <= 0 || value > max)
    return CorruptData(source + ": hyper-parameter " + what + " = " + std::to_string(value) +
                       " is out of range (1.." + std::to_string(max) + ")");
  return Status::Ok();
}

}  // namespace

blocks::RopeConfig ModelConfig::rope() const {
  blocks::RopeConfig c;
  c.head_dim = static_cast<int32_t>(head_dim);
  c.freq_base = hparams.rope_freq_base;
  c.style = hparams.rope_style;
  c.scaling = hparams.rope_scaling;
  c.scaling_factor = hparams.rope_scaling_factor;
  c.original_context = hparams.rope_original_context;
  c.low_freq_factor = hparams.rope_low_freq_factor;
  c.high_freq_factor = hparams.rope_high_freq_factor;
  return c;
}

Result<ModelConfig> resolve_config(const WeightStore& weights) {
  const std::string& src = weights.source();
  ModelConfig c;
  auto read = read_llama_hparams(weights, c.notes);
  if (!read.ok()) return read.status();
  c.hparams = std::move(read).value();
  c.names = TensorNames(weights.format());
  LlamaHParams& hp = c.hparams;

  TESSERA_RETURN_IF_ERROR(check_range(src, "embedding_length", hp.embedding_length, kMaxWidth));
  TESSERA_RETURN_IF_ERROR(check_range(src, "block_count", hp.block_count, kMaxLayers));
  TESSERA_RETURN_IF_ERROR(check_range(src, "head_count", hp.head_count, kMaxHeads));
  TESSERA_RETURN_IF_ERROR(check_range(src, "head_count_kv", hp.head_count_kv, kMaxHeads));
  TESSERA_RETURN_IF_ERROR(check_range(src, "feed_forward_length", hp.feed_forward_length, kMaxWidth));
  TESSERA_RETURN_IF_ERROR(check_range(src, "context_length", hp.context_length, kMaxContext));
  if (hp.head_count % hp.head_count_kv != 0)
    return CorruptData(src + ": head_count " + std::to_string(hp.head_count) +
                       " is not a multiple of head_count_kv " + std::to_string(hp.head_count_kv));

  if (hp.head_dim == 0) {
    if (hp.embedding_length % hp.head_count != 0)
      return CorruptData(src + ": head_dim is absent and embedding_length " +
                         std::to_string(hp.embedding_length) + " is not a multiple of head_count " +
                         std::to_string(hp.head_count));
    hp.head_dim = hp.embedding_length / hp.head_count;
  }
  TESSERA_RETURN_IF_ERROR(check_range(src, "head_dim", hp.head_dim, kMaxWidth));
  TESSERA_RETURN_IF_ERROR(check_range(src, "head_count * head_dim", hp.head_count * hp.head_dim, kMaxWidth));
  if (!(hp.rms_norm_eps > 0.0) || hp.rms_norm_eps > 1.0)
    return CorruptData(src + ": rms_norm_eps = " + std::to_string(hp.rms_norm_eps) +
                       " is out of range (0, 1]");

  if (hp.vocab_size == 0) {
    // GGUF llama files often omit vocab_size; the embedding's row count is the truth.
    if (const TensorRef* embd = weights.find(c.names.global("token_embd.weight")); embd != nullptr && embd->ndim == 2)
      hp.vocab_size = embd->shape[0];
  }
  TESSERA_RETURN_IF_ERROR(check_range(src, "vocab_size", hp.vocab_size, kMaxVocab));


  c.n_embd = hp.embedding_length;
  c.n_layer = hp.block_count;
  c.n_head = hp.head_count;
  c.n_kv_head = hp.head_count_kv;
  c.head_dim = hp.head_dim;
  c.n_ff = hp.feed_forward_length;
  c.vocab = hp.vocab_size;
  c.max_context = hp.context_length;
  const std::string rope_error = blocks::validate_rope(c.rope());
  if (!rope_error.empty()) return Unsupported(src + ": " + rope_error);
  return c;
}

}  // namespace tessera::transformer
