// transformer_model.hpp: the Llama-family decoder as a tessera::Model.
//
// One forward runs every token of the batch through the layers together, so
// each weight matrix is read once per step whatever the number of sequences:
//   x = embed(tokens)
//   per layer: x += W_o · attention(rope(W_q · norm(x)), rope(W_k · norm(x)), W_v · norm(x))
//              x += W_down · (silu(W_gate · norm(x)) * (W_up · norm(x)))
//   logits = W_out · norm(x)   (only for the rows the batch asks for)
#pragma once

#include <memory>
#include <vector>

#include "model_config.hpp"
#include "scratch.hpp"
#include "tessera/architecture.hpp"
#include "tessera/blocks/batch_plan.hpp"
#include "tessera/blocks/rope.hpp"
#include "transformer_weights.hpp"

namespace tessera::transformer {

// Validates the weights against their hyper-parameters and builds the model.
// Never throws. The model keeps nothing of `builder` but its attention kernel
// (which the ModelBuilder contract makes live as long as the Model).
Result<std::unique_ptr<Model>> build_transformer(ModelBuilder& builder) noexcept;

class TransformerModel final : public Model {
 public:
  TransformerModel(ModelConfig config, TransformerWeights weights, AttentionKernel& attention);

  int64_t vocab_size() const noexcept override { return config_.vocab; }
  SequenceStateSpec state_spec() const noexcept override { return {config_.max_context, memory_}; }
  Status forward(const Batch& batch, SequenceMemory& memory, float* logits) noexcept override;
  uint64_t weight_bytes() const noexcept override { return weights_.weight_bytes; }
  int32_t layer_count() const noexcept override { return static_cast<int32_t>(config_.n_layer); }
  int64_t hidden_size() const noexcept override { return config_.n_embd; }
  Status embed(std::span<const TokenId> tokens, float* hidden) noexcept override;
  Status forward_layers(const Batch& batch, SequenceMemory& memory, int32_t first_layer, int32_t last_layer,
                        float* hidden) noexcept override;

 private:
  Status run(const Batch& batch, SequenceMemory& memory, float* logits);
  // Plans the batch and sizes the scratch for it; returns the first layer's K/V view, checked.
  Result<KvLayerView> prepare(const Batch& batch, SequenceMemory& memory);
  // Layer l over the residual stream resid[n, n_embd], in place. With
  // `narrow` (the forward's last layer) only the logit rows go on after the
  // attention: resid then points at the gathered rows and n is their count.
  // Returns false in `go_on` when nothing after the layer's K/V is needed.
  Status run_layer(int64_t l, SequenceMemory& memory, const KvLayerView& first_view, float*& resid, int64_t& n,
                   bool narrow, bool& go_on);
  Status check_view(const KvLayerView& view, int64_t layer, int32_t block_size) const;
  void apply_rope(int64_t n_rows);
  void write_kv(const KvLayerView& view, int64_t n_rows);

  ModelConfig config_;
  TransformerWeights weights_;
  AttentionKernel& attention_;
  std::vector<LayerMemorySpec> memory_;  // [n_layer]: K and V per token, every layer
  blocks::RopeTable rope_;
  blocks::BatchPlan plan_;
  Scratch scratch_;
};

}  // namespace tessera::transformer
