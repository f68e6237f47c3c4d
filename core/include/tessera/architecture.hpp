// tessera/architecture.hpp: model architectures: from a WeightStore to a runnable Model.
//
// An Architecture plugin names the GGUF `general.architecture` values it serves
// and builds a Model through a ModelBuilder the core provides: the builder
// dispatches each weight to the quant plugin that declares its format and
// supplies the attention kernel the pipeline chose.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/attention.hpp"
#include "tessera/kv_cache.hpp"
#include "tessera/linear.hpp"
#include "tessera/plugin.hpp"
#include "tessera/status.hpp"
#include "tessera/weights.hpp"

namespace tessera {

using TokenId = int32_t;

// One sequence's share of a batch: tokens[token_offset, token_offset + n_tokens)
// at positions [n_past, n_past + n_tokens).
struct BatchSeq {
  SeqId seq = 0;
  int32_t token_offset = 0;
  int32_t n_tokens = 0;
  int32_t n_past = 0;
  bool all_logits = false;  // logits for every token (perplexity, verification) or the last only
};

// Tokens of several sequences processed in one forward, so weights are read once.
struct Batch {
  std::span<const TokenId> tokens;
  std::span<const BatchSeq> seqs;

  // Rows of logits forward() writes: n_tokens for all_logits sequences, else 1, in seqs order.
  int64_t logit_rows() const {
    int64_t n = 0;
    for (const auto& s : seqs) n += s.all_logits ? s.n_tokens : 1;
    return n;
  }
};

// Decodes rows of one stored tensor to f32 on demand (ABI 2.1). Made by the
// core's ModelBuilder; it holds the quant plugin that executes the tensor's
// format, so it may outlive the builder and be called from forward().
class RowDecoder {
 public:
  virtual ~RowDecoder() = default;
  // out[n_rows, cols] = rows [first_row, first_row + n_rows) as f32.
  virtual Status decode(int64_t first_row, int64_t n_rows, float* out) const noexcept = 0;
};

// Provided by the core while an Architecture builds a Model.
class ModelBuilder {
 public:
  virtual ~ModelBuilder() = default;
  virtual const WeightStore& weights() const = 0;
  // A Linear for weight `name` (and bias `bias_name` if non-empty and present).
  virtual Result<std::unique_ptr<Linear>> linear(std::string_view name,
                                                 std::string_view bias_name = {}) = 0;
  // A whole tensor converted to f32 into out[numel].
  virtual Status dequantize(const TensorRef& tensor, float* out) = 0;
  // Rows of a 2-D tensor converted to f32 (embedding lookups).
  virtual Status dequantize_rows(const TensorRef& tensor, int64_t first_row, int64_t n_rows,
                                 float* out) = 0;
  // The attention kernel chosen by the pipeline; lives as long as the Model.
  virtual AttentionKernel& attention() = 0;
  // From ABI 2.1: a decoder of a 2-D tensor's rows for use after build(), so
  // a Model can keep a quantized embedding table in its stored format and
  // decode only the rows a batch looks up (instead of a whole f32 copy). The
  // tensor must outlive the decoder (the WeightStore outlives the Model).
  // Unsupported from a builder that cannot (test fakes).
  virtual Result<std::unique_ptr<RowDecoder>> row_decoder(const TensorRef& /*tensor*/) {
    return Status(Unsupported("this builder makes no row decoders"));
  }
};

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelHParams& hparams() const = 0;
  virtual SequenceStateSpec state_spec() const = 0;
  // Runs the batch: appends the K/V (or state) of its tokens to `cache` (the
  // caller has reserved the slots with append_slots) and writes logits
  // [batch.logit_rows(), vocab_size] f32.
  virtual Status forward(const Batch& batch, KvCache& cache, float* logits) noexcept = 0;
  // Bytes of weights read by one forward (for roofline figures).
  virtual uint64_t weight_bytes() const = 0;
};

class Architecture : public PluginObject {
 public:
  // general.architecture values served, e.g. {"llama", "qwen2", "mistral"}.
  virtual std::vector<std::string> supported() const = 0;
  virtual Result<std::unique_ptr<Model>> build(ModelBuilder& builder) noexcept = 0;
};

}  // namespace tessera
