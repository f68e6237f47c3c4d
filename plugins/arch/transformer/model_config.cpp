#include "model_config.hpp"

#include <algorithm>

#include "rope.hpp"

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

const std::vector<std::string>& supported_architectures() {
  static const std::vector<std::string> archs = {"llama", "mistral", "qwen2", "smollm"};
  return archs;
}

std::string shape_string(const TensorRef& t) {
  std::string s = "[";
  for (int i = 0; i < t.ndim; ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(t.shape[i]);
  }
  return s + "]";
}

namespace {

std::string dims_string(std::initializer_list<int64_t> shape) {
  std::string s = "[";
  bool first = true;
  for (int64_t d : shape) {
    if (!first) s += ", ";
    s += std::to_string(d);
    first = false;
  }
  return s + "]";
}

Status check_shape(const WeightStore& weights, const TensorRef& t,
                   std::initializer_list<int64_t> shape) {
  bool same = t.ndim == static_cast<int32_t>(shape.size());
  int i = 0;
  for (int64_t d : shape) {
    if (!same) break;
    same = t.shape[i++] == d;
  }
  if (same) return Status::Ok();
  return InvalidArgument(weights.source() + ": tensor " + t.name + " has shape " + shape_string(t) +
                         " but the hyper-parameters imply " + dims_string(shape));
}

}  // namespace

Status expect_tensor(const WeightStore& weights, const std::string& name,
                     std::initializer_list<int64_t> shape) {
  const TensorRef* t = weights.find(name);
  if (t == nullptr)
    return NotFound(weights.source() + ": tensor " + name + " is missing (expected shape " +
                    dims_string(shape) + ")");
  return check_shape(weights, *t, shape);
}

Status expect_optional_tensor(const WeightStore& weights, const std::string& name,
                              std::initializer_list<int64_t> shape) {
  const TensorRef* t = weights.find(name);
  return t == nullptr ? Status::Ok() : check_shape(weights, *t, shape);
}

Result<ModelConfig> resolve_config(const WeightStore& weights) {
  const std::string& src = weights.source();
  ModelConfig c;
  c.hparams = weights.hparams();
  ModelHParams& hp = c.hparams;

  const auto& archs = supported_architectures();
  if (std::find(archs.begin(), archs.end(), hp.arch) == archs.end())
    return Unsupported(src + ": architecture '" + hp.arch +
                       "' is not served by the transformer plugin (it serves llama, mistral, qwen2, smollm)");

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
    if (const TensorRef* embd = weights.find("token_embd.weight"); embd != nullptr && embd->ndim == 2)
      hp.vocab_size = embd->shape[0];
  }
  TESSERA_RETURN_IF_ERROR(check_range(src, "vocab_size", hp.vocab_size, kMaxVocab));

  const std::string rope_error =
      validate_rope(RopeConfig::from_hparams(hp, static_cast<int32_t>(hp.head_dim)));
  if (!rope_error.empty()) return Unsupported(src + ": " + rope_error);

  c.n_embd = hp.embedding_length;
  c.n_layer = hp.block_count;
  c.n_head = hp.head_count;
  c.n_kv_head = hp.head_count_kv;
  c.head_dim = hp.head_dim;
  c.n_ff = hp.feed_forward_length;
  c.vocab = hp.vocab_size;
  c.max_context = hp.context_length;
  return c;
}

}  // namespace tessera::transformer
