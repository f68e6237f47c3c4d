#include "transformer_model.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "tessera/blocks/elementwise.hpp"
#include "tessera/blocks/kv_rows.hpp"
#include "tessera/blocks/shared_input.hpp"

namespace tessera::transformer {

using blocks::add_inplace;
using blocks::forward_shared_input;
using blocks::LinearOutput;
using blocks::rms_norm_rows;
using blocks::swiglu_inplace;

namespace {

// Positions whose cos/sin are computed at build time; later ones are added on demand.
constexpr int64_t kInitialRopePositions = 4096;

}  // namespace

Result<std::unique_ptr<Model>> build_transformer(ModelBuilder& builder) noexcept {
  return guard([&]() -> Result<std::unique_ptr<Model>> {
    auto config = resolve_config(builder.weights());
    if (!config.ok()) return config.status();
    for (const std::string& note : config->notes) builder.warn(note);
    auto weights = load_weights(builder, config.value());
    if (!weights.ok()) return weights.status();
    auto attention = builder.attention();
    if (!attention.ok()) return attention.status();
    std::unique_ptr<Model> model =
        std::make_unique<TransformerModel>(std::move(config).value(), std::move(weights).value(), **attention);
    return model;
  });
}

TransformerModel::TransformerModel(ModelConfig config, TransformerWeights weights, AttentionKernel& attention)
    : config_(std::move(config)),
      weights_(std::move(weights)),
      attention_(attention),
      memory_(static_cast<size_t>(config_.n_layer),
              LayerMemorySpec::attention(static_cast<int32_t>(config_.n_kv_head),
                                         static_cast<int32_t>(config_.head_dim))),
      rope_(config_.rope(), config_.max_context) {
  rope_.ensure(std::min(config_.max_context, kInitialRopePositions));
}

Status TransformerModel::forward(const Batch& batch, SequenceMemory& memory, float* logits) noexcept {
  return guard([&] { return run(batch, memory, logits); });
}

Status TransformerModel::check_view(const KvLayerView& view, int64_t layer, int32_t block_size) const {
  if (view.k == nullptr || view.v == nullptr || view.n_kv_head != config_.n_kv_head ||
      view.head_dim != config_.head_dim || view.block_size != block_size)
    return InvalidArgument("transformer: KV cache layer " + std::to_string(layer) + " has " +
                           std::to_string(view.n_kv_head) + " KV heads of " +
                           std::to_string(view.head_dim) + " (block size " +
                           std::to_string(view.block_size) + "), the model needs " +
                           std::to_string(config_.n_kv_head) + " of " +
                           std::to_string(config_.head_dim) + " (was it configured from state_spec()?)");
  return Status::Ok();
}

void TransformerModel::apply_rope(int64_t n_rows) {
  float* q = scratch_.q.as<float>();  // [n_rows, n_head, head_dim]
  float* k = scratch_.k.as<float>();  // [n_rows, n_kv_head, head_dim]
  const auto n_head = static_cast<int32_t>(config_.n_head);
  const auto n_kv_head = static_cast<int32_t>(config_.n_kv_head);
  for (int64_t r = 0; r < n_rows; ++r) {
    const int32_t pos = plan_.row_pos[static_cast<size_t>(r)];
    rope_.apply(q + r * config_.q_dim(), n_head, pos);
    rope_.apply(k + r * config_.kv_dim(), n_kv_head, pos);
  }
}

void TransformerModel::write_kv(const KvLayerView& view, int64_t n_rows) {
  const float* k = scratch_.k.as<float>();  // [n_rows, kv_dim]
  const float* v = scratch_.v.as<float>();  // [n_rows, kv_dim]
  const int64_t kv_dim = config_.kv_dim();
  for (int64_t r = 0; r < n_rows; ++r) {
    const auto& table = plan_.tables[static_cast<size_t>(plan_.row_seq[static_cast<size_t>(r)])];
    const int64_t slot = view.slot_offset(table, plan_.row_pos[static_cast<size_t>(r)]);
    blocks::store_kv(view, view.k, slot, k + r * kv_dim, kv_dim);
    blocks::store_kv(view, view.v, slot, v + r * kv_dim, kv_dim);
  }
}

Result<KvLayerView> TransformerModel::prepare(const Batch& batch, SequenceMemory& memory) {
  const KvLayerView first_view = memory.layer(0);
  TESSERA_RETURN_IF_ERROR(check_view(first_view, 0, first_view.block_size));
  const blocks::BatchLimits limits{config_.vocab, config_.max_context, /*attention_layers=*/true, first_view.block_size};
  TESSERA_RETURN_IF_ERROR(plan_.plan(batch, memory, limits));
  scratch_.ensure(config_, plan_.n_rows());
  rope_.ensure(static_cast<int64_t>(plan_.max_position) + 1);
  return first_view;
}

Status TransformerModel::run(const Batch& batch, SequenceMemory& memory, float* logits) {
  if (logits == nullptr && batch.logit_rows() > 0) return InvalidArgument("transformer: forward() needs a logits buffer");
  auto first_view = prepare(batch, memory);
  if (!first_view.ok()) return first_view.status();
  const int64_t d = config_.n_embd;
  float* resid = scratch_.residual.as<float>();  // [n, n_embd]
  TESSERA_RETURN_IF_ERROR(embed(batch.tokens, resid));

  int64_t n = plan_.n_rows();  // rows still carried; narrows to the logit rows in the last layer
  const int64_t n_layer = config_.n_layer;
  for (int64_t l = 0; l < n_layer; ++l) {
    bool go_on = true;
    TESSERA_RETURN_IF_ERROR(run_layer(l, memory, *first_view, resid, n, /*narrow=*/l == n_layer - 1, go_on));
    if (!go_on) return Status::Ok();
  }
  // n now equals batch.logit_rows(); logits: [n, vocab]. `normed` is free
  // whichever buffer resid ended in (run_layer swapped the two).
  float* normed = resid == scratch_.residual.as<float>() ? scratch_.normed.as<float>() : scratch_.residual.as<float>();
  rms_norm_rows(resid, weights_.output_norm.data(), normed, n, d, static_cast<float>(config_.hparams.rms_norm_eps));
  return weights_.output->forward(normed, logits, n);
}

Status TransformerModel::embed(std::span<const TokenId> tokens, float* hidden) noexcept {
  return guard([&] { return weights_.token_embd.lookup_tokens(tokens, config_.vocab, "transformer", hidden); });
}

Status TransformerModel::forward_layers(const Batch& batch, SequenceMemory& memory, int32_t first_layer,
                                        int32_t last_layer, float* hidden) noexcept {
  return guard([&]() -> Status {
    TESSERA_RETURN_IF_ERROR(blocks::check_layer_range("transformer", first_layer, last_layer, config_.n_layer, hidden));
    auto first_view = prepare(batch, memory);
    if (!first_view.ok()) return first_view.status();
    int64_t n = plan_.n_rows();
    float* resid = hidden;  // [n, n_embd], the caller's
    for (int32_t l = first_layer; l < last_layer; ++l) {
      bool go_on = true;
      TESSERA_RETURN_IF_ERROR(run_layer(l, memory, *first_view, resid, n, /*narrow=*/false, go_on));
    }
    return Status::Ok();
  });
}

Status TransformerModel::run_layer(int64_t l, SequenceMemory& memory, const KvLayerView& first_view, float*& resid,
                                   int64_t& n, bool narrow, bool& go_on) {
  const int64_t d = config_.n_embd;
  const int64_t ff = config_.n_ff;
  const auto eps = static_cast<float>(config_.hparams.rms_norm_eps);
  // The buffer that is not the residual stream (they swap when the last layer narrows).
  float* normed = resid == scratch_.normed.as<float>() ? scratch_.residual.as<float>() : scratch_.normed.as<float>();
  float* q = scratch_.q.as<float>();             // [n, q_dim]
  float* k = scratch_.k.as<float>();             // [n, kv_dim]
  float* v = scratch_.v.as<float>();             // [n, kv_dim]
  float* attn = scratch_.attn_out.as<float>();   // [n, q_dim]
  float* gate = scratch_.gate.as<float>();       // [n, n_ff]
  float* up = scratch_.up.as<float>();           // [n, n_ff]
  LayerWeights& lw = weights_.layers[static_cast<size_t>(l)];

  // Attention block: every row of the batch takes part (their K/V enter the cache).
  rms_norm_rows(resid, lw.attn_norm.data(), normed, n, d, eps);
  const LinearOutput qkv[] = {{lw.attn_q.get(), q}, {lw.attn_k.get(), k}, {lw.attn_v.get(), v}};
  TESSERA_RETURN_IF_ERROR(forward_shared_input(qkv, normed, n));
  apply_rope(n);
  const KvLayerView view = memory.layer(static_cast<int32_t>(l));
  TESSERA_RETURN_IF_ERROR(check_view(view, l, first_view.block_size));
  write_kv(view, n);
  // A step of prompt chunks none of which ends its prompt wants no logits:
  // the last layer's K/V are written, and nothing after them is needed.
  if (narrow && plan_.logit_rows.empty()) {
    go_on = false;
    return Status::Ok();
  }

  AttentionArgs args;
  args.q = q;
  args.out = attn;
  args.n_head = static_cast<int32_t>(config_.n_head);
  args.n_kv_head = static_cast<int32_t>(config_.n_kv_head);
  args.head_dim = static_cast<int32_t>(config_.head_dim);
  args.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(config_.head_dim)));
  args.kv = view;
  args.seqs = plan_.attention;
  TESSERA_RETURN_IF_ERROR(attention_.forward(args));

  float* attn_rows = attn;
  if (narrow) {
    // Nothing after the last attention mixes rows, so only the rows whose
    // logits are asked go on: gather them (in output order) into free buffers.
    blocks::gather_rows(plan_.logit_rows, attn, q, config_.q_dim());
    blocks::gather_rows(plan_.logit_rows, resid, normed, d);
    std::swap(resid, normed);
    attn_rows = q;
    n = static_cast<int64_t>(plan_.logit_rows.size());
  }

  TESSERA_RETURN_IF_ERROR(lw.attn_output->forward(attn_rows, normed, n));
  add_inplace(resid, normed, n * d);

  // SwiGLU feed-forward block.
  rms_norm_rows(resid, lw.ffn_norm.data(), normed, n, d, eps);
  const LinearOutput gate_up[] = {{lw.ffn_gate.get(), gate}, {lw.ffn_up.get(), up}};
  TESSERA_RETURN_IF_ERROR(forward_shared_input(gate_up, normed, n));
  swiglu_inplace(gate, up, n * ff);
  TESSERA_RETURN_IF_ERROR(lw.ffn_down->forward(gate, normed, n));
  add_inplace(resid, normed, n * d);
  return Status::Ok();
}

}  // namespace tessera::transformer
