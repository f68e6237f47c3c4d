// tessera/architecture.hpp: model architectures: from a WeightStore to a runnable Model.
//
// An Architecture plugin names the model kinds it serves (GGUF
// general.architecture values, Hugging Face architectures names), reads its
// own hyper-parameters from the store's raw metadata, maps its own tensor
// names, and builds a Model through a ModelBuilder the core provides: the
// builder dispatches each weight to the quant plugin that declares its format
// and makes the attention kernel the pipeline chose when the model asks for it.
// Adding an architecture needs no change to the core.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tessera/abi.hpp"
#include "tessera/attention.hpp"
#include "tessera/linear.hpp"
#include "tessera/sequence_memory.hpp"
#include "tessera/status.hpp"
#include "tessera/weights.hpp"

namespace tessera {

using TokenId = int32_t;

// One sequence's share of a batch: tokens[token_offset, token_offset + n_tokens)
// at positions [n_past, n_past + n_tokens). Logits are wanted for its last
// n_logits tokens: 1 to sample the next token, n_tokens for perplexity or to
// verify speculative tokens, 0 for a prompt chunk that is not the prompt's last.
struct BatchSeq {
  SeqId seq = 0;
  int32_t token_offset = 0;
  int32_t n_tokens = 0;
  int32_t n_past = 0;
  int32_t n_logits = 1;  // 0 <= n_logits <= n_tokens
};
static_assert(offsetof(BatchSeq, seq) == 0);
static_assert(offsetof(BatchSeq, n_past) == 12);
static_assert(offsetof(BatchSeq, n_logits) == 16);
static_assert(sizeof(BatchSeq) == 20);

// Where the engine splits a prompt over several forwards (a long prompt, or
// a step's token budget shared with other requests), it ends the pieces on
// positions that are multiples of this (the prompt's own end aside): a piece
// whose share of a step reaches none waits for a step with more room, unless
// the budget itself is smaller than this. An architecture whose prompt
// algorithm works in aligned chunks (Mamba-2's chunked scan, 64 positions)
// thus gets the same chunks whether or not a prompt was split.
inline constexpr int32_t kPromptSplitAlignment = 64;

// Tokens of several sequences processed in one forward, so weights are read once.
struct Batch {
  std::span<const TokenId> tokens;
  std::span<const BatchSeq> seqs;

  // Rows of logits forward() writes: each sequence's n_logits, in seqs order.
  int64_t logit_rows() const noexcept {
    int64_t n = 0;
    for (const auto& s : seqs) n += s.n_logits;
    return n;
  }
};
static_assert(sizeof(Batch) == 32);

// Decodes rows of one stored tensor to f32 on demand. Made by the core's
// ModelBuilder; it holds the quant plugin that executes the tensor's format,
// so it may outlive the builder and be called from forward().
class RowDecoder : public AbiObject {
 public:
  // out[n_rows, cols] = rows [first_row, first_row + n_rows) as f32.
  virtual Status decode(int64_t first_row, int64_t n_rows, float* out) const noexcept = 0;
};

// Provided by the core while an Architecture builds a Model.
class ModelBuilder : public AbiObject {
 public:
  virtual const WeightStore& weights() const noexcept = 0;
  // A Linear for stored weight `name` (and bias `bias_name` if non-empty and present).
  virtual Result<std::unique_ptr<Linear>> linear(std::string_view name, std::string_view bias_name = {}) noexcept = 0;
  // A whole tensor converted to f32 into out[numel].
  virtual Status dequantize(const TensorRef& tensor, float* out) noexcept = 0;
  // Rows of a 2-D tensor converted to f32 (embedding lookups).
  virtual Status dequantize_rows(const TensorRef& tensor, int64_t first_row, int64_t n_rows, float* out) noexcept = 0;
  // A decoder of a 2-D tensor's rows for use after build(), so a Model can
  // keep a quantized embedding table in its stored format and decode only the
  // rows a batch looks up. The tensor must outlive the decoder (the
  // WeightStore outlives the Model).
  virtual Result<std::unique_ptr<RowDecoder>> row_decoder(const TensorRef& tensor) noexcept = 0;
  // The attention kernel the pipeline chose, made on the first call (a model
  // without attention layers never asks); lives as long as the Model.
  virtual Result<AttentionKernel*> attention() noexcept = 0;
  // Tells the user something they should know about the model (the engine
  // logs it as a warning): a context capped, a setting ignored.
  virtual void warn(std::string_view message) noexcept = 0;
#if TESSERA_ABI_MINOR >= 9
  // ABI 3.9: the Linear that turns the last hidden state into logits over the
  // vocabulary ([n, vocab] from weight `name`, made as linear() makes it).
  // The core may compute only some of the vocabulary's rows there, writing
  // -infinity for the others: a speculative draft limited to the tokens a
  // text uses most ([speculative] draft_vocabulary) reads a fraction of its
  // output head. Call it only where provides(builder, 9), and only for that
  // head: any other Linear keeps every row.
  virtual Result<std::unique_ptr<Linear>> output_linear(std::string_view name,
                                                        std::string_view bias_name = {}) noexcept {
    return linear(name, bias_name);
  }
#endif
};

class Model : public AbiObject {
 public:
  virtual int64_t vocab_size() const noexcept = 0;
  // What each layer remembers per sequence; max_context is the trained context.
  virtual SequenceStateSpec state_spec() const noexcept = 0;
  // Runs the batch: appends its tokens' K/V to `memory` (the caller reserved
  // the slots with append_slots) and advances recurrent states, and writes
  // logits [batch.logit_rows(), vocab_size()] f32.
  virtual Status forward(const Batch& batch, SequenceMemory& memory, float* logits) noexcept = 0;
  // Bytes of weights read by one forward (for roofline figures).
  virtual uint64_t weight_bytes() const noexcept = 0;

#if TESSERA_ABI_MINOR >= 6
  // ABI 3.6, optional: the forward cut between its layers, for a caller that
  // runs one layer at a time over inputs it stored (`tessera quantize`
  // calibrates layer l on what layers 0..l-1 computed once quantized; with
  // whole forwards that costs about L/2 forwards over the calibration text,
  // layer by layer about 2). A model that does not cut its forward keeps
  // these defaults, and the caller runs whole forwards.
  //
  // The layers embed() and forward_layers() count, and the width of the
  // residual stream that passes between them; 0: not offered.
  virtual int32_t layer_count() const noexcept { return 0; }
  virtual int64_t hidden_size() const noexcept { return 0; }
  // hidden[tokens.size(), hidden_size()] = the stream entering layer 0 (the
  // tokens' embeddings).
  virtual Status embed(std::span<const TokenId> /*tokens*/, float* /*hidden*/) noexcept {
    return Unsupported("this model does not run its layers one at a time");
  }
  // Runs layers [first_layer, last_layer) over hidden[batch.tokens.size(),
  // hidden_size()] in place, every row (batch's n_logits are not read: no
  // logits), appending the tokens' K/V of those layers to `memory` and
  // advancing their states as forward() does. A layer's output is the bits
  // forward() gives it on the same input.
  virtual Status forward_layers(const Batch& /*batch*/, SequenceMemory& /*memory*/, int32_t /*first_layer*/,
                                int32_t /*last_layer*/, float* /*hidden*/) noexcept {
    return Unsupported("this model does not run its layers one at a time");
  }
#endif
};

// A hyper-parameter as an architecture read it, for `tessera inspect`.
struct HyperParameter {
  std::string name;
  std::variant<int64_t, double, bool, std::string> value;
};

#if TESSERA_ABI_MINOR >= 7
// ABI 3.7: a model stored some other way (a Hugging Face folder) as a GGUF
// file of the architecture's would hold it, for `tessera convert` and for
// `tessera quantize` of such a folder. The core adds the tokenizer, the
// general.* keys and the tensors' bytes; the plan says what only the
// architecture knows.
struct GgufKeyValue {
  std::string key;  // "llama.block_count"
  std::variant<uint32_t, float, bool, std::string> value;  // GGUF UINT32, FLOAT32, BOOL, STRING
};
struct GgufTensorPlan {
  std::string name;    // in the GGUF file: "blk.0.attn_q.weight"
  std::string source;  // in the store: "model.layers.0.self_attn.q_proj.weight"
  // > 0: the rows are this many heads, each stored as two halves that GGUF
  // keeps interleaved (a llama-style RoPE): GGUF row h*D + 2i + s is stored
  // row h*D + s*D/2 + i, s in {0, 1}, i < D/2, D = rows / interleave_heads.
  int64_t interleave_heads = 0;
};
struct GgufLayout {
  std::string architecture;  // general.architecture
  std::vector<GgufKeyValue> metadata;
  std::vector<GgufTensorPlan> tensors;  // in the order the file should hold them
  std::vector<std::string> notes;       // for the user: stored tensors left out, and why
};
#endif

class Architecture : public PluginObject {
 public:
  // Model kinds served (static storage): GGUF general.architecture values
  // ("llama") and Hugging Face architectures names ("LlamaForCausalLM"),
  // compared with WeightStore::architecture().
  virtual std::span<const std::string_view> supported() const noexcept = 0;
  // The hyper-parameters this architecture reads from `weights`, checked as
  // build() checks them (errors name the file and the key).
  virtual Status describe(const WeightStore& weights, std::vector<HyperParameter>& out) const noexcept = 0;
  virtual Result<std::unique_ptr<Model>> build(ModelBuilder& builder) noexcept = 0;

#if TESSERA_ABI_MINOR >= 7
  // ABI 3.7, optional: the GGUF form of the model in `weights` (checked as
  // build() checks it). Unsupported where the architecture cannot say it
  // (the default), or a store holds what GGUF has no form for.
  virtual Status gguf_layout(const WeightStore& /*weights*/, GgufLayout& /*out*/) const noexcept {
    return Unsupported("this architecture plugin does not describe its models as GGUF");
  }
#endif
};

}  // namespace tessera
