// mamba_model.hpp: Mamba-1 and Mamba-2 as a tessera::Model.
//
// One forward runs every token of the batch through the layers together, so
// each projection matrix is read once per step and a prompt's projections
// are matrix products over all its tokens (not one token at a time):
//   x = embed(tokens)
//   per layer: x += out_proj(mixer(rms_norm(x)))
//   logits = output(rms_norm(x))   (only for the rows the batch asks for)
// Only the convolution and the scan walk each sequence's tokens in order,
// from the state its memory holds (ssm.hpp); their work is split over
// sequences and channels (heads), so sequences of different lengths share a
// step and none's result depends on the others.
//
// Memory per layer and sequence (SequenceStateSpec, recurrent): part 0 the
// convolution window [d_conv - 1, conv_channels], part 1 the SSM state
// (Mamba-1 [d_inner, d_state], Mamba-2 [n_head, head_dim, d_state]); a
// fixed size, whatever the sequence's length.
#pragma once

#include <memory>
#include <vector>

#include "mamba_config.hpp"
#include "mamba_weights.hpp"
#include "tessera/architecture.hpp"
#include "tessera/blocks/batch_plan.hpp"

namespace tessera::mamba {

// What a pipeline chooses for the model ([arch] with [model] arch = "mamba").
struct MambaOptions {
  // Mamba-2 prompt chunks send their whole chunks of kSsdChunk positions
  // through the chunked scan (chunked_span).
  bool chunked_scan = true;
};

Result<std::unique_ptr<Model>> build_mamba(ModelBuilder& builder, MambaOptions options = {}) noexcept;

class MambaModel final : public Model {
 public:
  MambaModel(MambaConfig config, MambaWeights weights, MambaOptions options = {});

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
  // Plans the batch and sizes the scratch for it.
  Status prepare(const Batch& batch, SequenceMemory& memory);
  // Layer l over the residual stream resid[n, n_embd], in place. With
  // `narrow` (the forward's last layer) only the logit rows go on after the
  // mixer: resid then points at the gathered rows and n is their count.
  // Returns false in `go_on` when nothing after the layer's states is needed.
  Status run_layer(const Batch& batch, int64_t l, SequenceMemory& memory, float*& resid, int64_t& n, bool narrow,
                   bool& go_on);
  Status gather_states(const Batch& batch, SequenceMemory& memory, int32_t layer);
  void convolve(const Batch& batch, const MambaLayerWeights& lw, int64_t n_rows);
  Status mix_mamba1(const Batch& batch, const MambaLayerWeights& lw, int64_t n_rows);
  void mix_mamba2(const Batch& batch, const MambaLayerWeights& lw, int64_t n_rows);
  // Of a sequence's tokens in a Mamba-2 batch, those the chunked scan takes:
  // [lead, lead + chunks * kSsdChunk), whole chunks of positions counted from
  // the sequence's start (so a chunk's bits do not depend on where a forward
  // began), and only in prompt chunks (n_logits <= 1): rows whose logits are
  // asked (drafts being verified, scoring) follow the token-by-token scan,
  // so verifying drafts gives the bits of decoding them one at a time.
  struct ChunkedSpan {
    int64_t lead = 0, chunks = 0;
  };
  ChunkedSpan chunked_span(const BatchSeq& seq) const;

  // Per-step buffers, grown to the largest batch seen and then reused.
  struct Scratch {
    std::vector<float> residual;  // [n, n_embd]
    std::vector<float> normed;    // [n, n_embd]
    std::vector<float> proj;      // [n, in_proj_width]: in_proj's output
    std::vector<float> conv;      // [n, conv_channels]: after the convolution and SiLU
    std::vector<float> xdbc;      // Mamba-1: [n, dt_rank + 2 d_state]: x_proj's output
    std::vector<float> dt_in;     // Mamba-1: [n, dt_rank]
    std::vector<float> dt;        // Mamba-1: [n, d_inner]: dt_proj's output
    std::vector<float> y;         // [n, d_inner]: the mixer's gated output
    void ensure(const MambaConfig& c, int64_t n_rows);
  };

  MambaConfig config_;
  MambaWeights weights_;
  MambaOptions options_;
  std::vector<LayerMemorySpec> memory_;  // [n_layer], recurrent
  blocks::BatchPlan plan_;
  std::vector<RecurrentStateView> states_;  // [n_seqs] of the layer being run
  Scratch scratch_;
};

}  // namespace tessera::mamba
