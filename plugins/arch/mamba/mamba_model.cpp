#include "mamba_model.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "ssm.hpp"
#include "tessera/blocks/elementwise.hpp"

namespace tessera::mamba {

using blocks::add_inplace;
using blocks::rms_norm_rows;

namespace {

// Below this many multiply-adds a step's scan runs on one thread: a fork and
// join costs a few microseconds. A decode step of mamba-130m has 24k per layer
// (~70 us on one core): split, its scan took a third of the step on 2 threads.
constexpr int64_t kParallelWork = int64_t{1} << 13;

void copy_row(const float* src, float* dst, int64_t width) {
  std::memcpy(dst, src, static_cast<size_t>(width) * sizeof(float));
}

// Calls fn(seq_index, u0, u1) for slices [u0, u1) of `units` (channels or
// heads) of every sequence of the batch, on the team's threads when the work
// (`cost` per unit and row) is large enough. A unit's rows stay on one thread.
template <class Fn>
void for_each_sequence_slice(const Batch& batch, int64_t n_rows, int64_t units, int64_t cost, Fn&& fn) {
  const auto n_seqs = static_cast<int64_t>(batch.seqs.size());
  const bool parallel = n_rows * units * cost >= kParallelWork;
  const int64_t slices = parallel ? std::min<int64_t>(units, 2 * omp_get_max_threads()) : 1;
  const int64_t items = n_seqs * slices;
#pragma omp parallel for schedule(dynamic) if (parallel)
  for (int64_t i = 0; i < items; ++i) {
    const int64_t s = i / slices, k = i % slices;
    fn(s, units * k / slices, units * (k + 1) / slices);
  }
}

std::vector<LayerMemorySpec> memory_layout(const MambaConfig& c) {
  LayerMemorySpec layer;
  layer.kind = LayerMemoryKind::recurrent;
  layer.n_state_parts = 2;
  layer.state_elements = {c.conv_state_elements(), c.ssm_state_elements(), 0, 0};
  return std::vector<LayerMemorySpec>(static_cast<size_t>(c.n_layer), layer);
}

}  // namespace

Result<std::unique_ptr<Model>> build_mamba(ModelBuilder& builder, MambaOptions options) noexcept {
  return guard([&]() -> Result<std::unique_ptr<Model>> {
    auto config = read_mamba_config(builder.weights());
    if (!config.ok()) return config.status();
    auto weights = load_mamba_weights(builder, config.value());
    if (!weights.ok()) return weights.status();
    std::unique_ptr<Model> model =
        std::make_unique<MambaModel>(std::move(config).value(), std::move(weights).value(), options);
    return model;
  });
}

MambaModel::MambaModel(MambaConfig config, MambaWeights weights, MambaOptions options)
    : config_(std::move(config)), weights_(std::move(weights)), options_(options), memory_(memory_layout(config_)) {}

void MambaModel::Scratch::ensure(const MambaConfig& c, int64_t n) {
  const auto grow = [n](std::vector<float>& v, int64_t width) {
    const auto size = static_cast<size_t>(n * width);
    if (v.size() < size) v.resize(size);
  };
  grow(residual, c.n_embd);
  grow(normed, c.n_embd);
  grow(proj, c.in_proj_width());
  grow(conv, c.conv_channels());
  grow(y, c.d_inner);
  if (!c.mamba2()) {
    grow(xdbc, c.x_proj_width());
    grow(dt_in, c.dt_rank);
    grow(dt, c.d_inner);
  }
}

Status MambaModel::forward(const Batch& batch, SequenceMemory& memory, float* logits) noexcept {
  return guard([&] { return run(batch, memory, logits); });
}

Status MambaModel::gather_states(const Batch& batch, SequenceMemory& memory, int32_t layer) {
  states_.clear();
  for (const BatchSeq& s : batch.seqs) {
    const RecurrentStateView view = memory.state(s.seq, layer);
    if (view.parts[0] == nullptr || view.parts[1] == nullptr)
      return InvalidArgument("mamba: the memory keeps no recurrent state for layer " + std::to_string(layer) +
                             " of sequence " + std::to_string(s.seq) + " (was it configured from state_spec()?)");
    states_.push_back(view);
  }
  return Status::Ok();
}

// The causal convolution over in_proj's x (Mamba-1) or xBC (Mamba-2) columns.
void MambaModel::convolve(const Batch& batch, const MambaLayerWeights& lw, int64_t n_rows) {
  const MambaConfig& c = config_;
  const int64_t width = c.in_proj_width(), channels = c.conv_channels();
  const int64_t first = c.mamba2() ? c.d_inner : 0;  // Mamba-2's in_proj starts with z
  for_each_sequence_slice(batch, n_rows, channels, c.d_conv, [&](int64_t s, int64_t c0, int64_t c1) {
    const BatchSeq& bs = batch.seqs[static_cast<size_t>(s)];
    const Rows in{scratch_.proj.data() + bs.token_offset * width + first, width};
    const MutableRows out{scratch_.conv.data() + bs.token_offset * channels, channels};
    causal_conv_silu(in, out, bs.n_tokens, channels, c.d_conv, lw.conv_weight.data(), lw.conv_bias.data(),
                     states_[static_cast<size_t>(s)].parts[0], c0, c1);
  });
}

Status MambaModel::mix_mamba1(const Batch& batch, const MambaLayerWeights& lw, int64_t n) {
  const MambaConfig& c = config_;
  const int64_t width = c.in_proj_width(), xw = c.x_proj_width(), inner = c.d_inner, rank = c.dt_rank;
  float* xdbc = scratch_.xdbc.data();  // [n, dt_rank + 2 d_state]
  float* dt_in = scratch_.dt_in.data();
  TESSERA_RETURN_IF_ERROR(lw.x_proj->forward(scratch_.conv.data(), xdbc, n));
  for (int64_t r = 0; r < n; ++r) copy_row(xdbc + r * xw, dt_in + r * rank, rank);
  TESSERA_RETURN_IF_ERROR(lw.dt_proj->forward(dt_in, scratch_.dt.data(), n));
  float* dt = scratch_.dt.data();  // [n, d_inner]
#pragma omp parallel for schedule(static) if (n >= 8)
  for (int64_t r = 0; r < n; ++r) softplus_in_place(dt + r * inner, inner);
  for_each_sequence_slice(batch, n, inner, c.d_state, [&](int64_t s, int64_t c0, int64_t c1) {
    const int64_t t0 = batch.seqs[static_cast<size_t>(s)].token_offset;
    Mamba1Scan scan;
    scan.x = {scratch_.conv.data() + t0 * inner, inner};
    scan.dt = {dt + t0 * inner, inner};
    scan.b = {xdbc + t0 * xw + rank, xw};
    scan.c = {xdbc + t0 * xw + rank + c.d_state, xw};
    scan.a = lw.a.data();
    scan.d = lw.d.data();
    scan.state = states_[static_cast<size_t>(s)].parts[1];
    scan.y = {scratch_.y.data() + t0 * inner, inner};
    scan.d_state = c.d_state;
    mamba1_scan(scan, batch.seqs[static_cast<size_t>(s)].n_tokens, c0, c1);
  });
  float* y = scratch_.y.data();
  float* z = scratch_.proj.data() + inner;  // in_proj's second half
#pragma omp parallel for schedule(static) if (n >= 8)
  for (int64_t r = 0; r < n; ++r) gate_row(y + r * inner, z + r * width, inner);
  return Status::Ok();
}

static_assert(kPromptSplitAlignment % kSsdChunk == 0, "split prompts must keep the chunked scan's chunks");

MambaModel::ChunkedSpan MambaModel::chunked_span(const BatchSeq& seq) const {
  if (!options_.chunked_scan || seq.n_logits > 1) return {};
  const int64_t lead = (kSsdChunk - seq.n_past % kSsdChunk) % kSsdChunk;  // to the first chunk's start
  if (lead >= seq.n_tokens) return {};
  return {lead, (seq.n_tokens - lead) / kSsdChunk};
}

void MambaModel::mix_mamba2(const Batch& batch, const MambaLayerWeights& lw, int64_t n) {
  const MambaConfig& c = config_;
  const int64_t width = c.in_proj_width(), channels = c.conv_channels(), inner = c.d_inner;
  const int64_t bc_width = c.n_group * c.d_state;
  for_each_sequence_slice(batch, n, c.n_head, c.head_dim * c.d_state, [&](int64_t s, int64_t h0, int64_t h1) {
    const BatchSeq& seq = batch.seqs[static_cast<size_t>(s)];
    const int64_t t0 = seq.token_offset;
    const float* conv = scratch_.conv.data() + t0 * channels;  // [x | B | C] per row
    Mamba2Scan scan;
    scan.x = {conv, channels};
    scan.b = {conv + inner, channels};
    scan.c = {conv + inner + bc_width, channels};
    scan.dt_raw = {scratch_.proj.data() + t0 * width + inner + channels, width};
    scan.a = lw.a.data();
    scan.d = lw.d.data();
    scan.dt_bias = lw.dt_bias.data();
    scan.dt_min = static_cast<float>(c.dt_min);
    scan.dt_max = static_cast<float>(c.dt_max);
    scan.state = states_[static_cast<size_t>(s)].parts[1];
    scan.y = {scratch_.y.data() + t0 * inner, inner};
    scan.n_head = c.n_head;
    scan.head_dim = c.head_dim;
    scan.n_group = c.n_group;
    scan.d_state = c.d_state;
    // Token by token up to the first whole chunk, whole chunks, then the
    // rest (all of it token by token when the span is empty).
    const ChunkedSpan span = chunked_span(seq);
    const int64_t end = span.lead + span.chunks * kSsdChunk;
    mamba2_scan(scan, span.lead, h0, h1);
    mamba2_chunked_scan(scan.from(span.lead), span.chunks, h0, h1);
    mamba2_scan(scan.from(end), seq.n_tokens - end, h0, h1);
  });
  const auto eps = static_cast<float>(c.eps);
  float* y = scratch_.y.data();
  float* z = scratch_.proj.data();  // Mamba-2's in_proj starts with z
#pragma omp parallel for schedule(static) if (n >= 8)
  for (int64_t r = 0; r < n; ++r)
    gated_group_rms_norm(y + r * inner, z + r * width, lw.gated_norm.data(), inner, c.n_group, eps);
}

Status MambaModel::prepare(const Batch& batch, SequenceMemory& memory) {
  const MambaConfig& c = config_;
  TESSERA_RETURN_IF_ERROR(
      plan_.plan(batch, memory, blocks::BatchLimits{c.vocab, c.max_context, /*attention_layers=*/false, 0}));
  scratch_.ensure(c, plan_.n_rows());
  return Status::Ok();
}

Status MambaModel::run(const Batch& batch, SequenceMemory& memory, float* logits) {
  if (logits == nullptr && batch.logit_rows() > 0) return InvalidArgument("mamba: forward() needs a logits buffer");
  const MambaConfig& c = config_;
  TESSERA_RETURN_IF_ERROR(prepare(batch, memory));
  float* resid = scratch_.residual.data();  // [n, n_embd]
  TESSERA_RETURN_IF_ERROR(embed(batch.tokens, resid));

  int64_t n = plan_.n_rows();  // rows still carried; narrows to the logit rows in the last layer
  for (int64_t l = 0; l < c.n_layer; ++l) {
    bool go_on = true;
    TESSERA_RETURN_IF_ERROR(run_layer(batch, l, memory, resid, n, /*narrow=*/l == c.n_layer - 1, go_on));
    if (!go_on) return Status::Ok();
  }
  // n now equals batch.logit_rows(); logits: [n, vocab]. The buffer resid is
  // not in is free (run_layer swapped the two).
  float* normed = resid == scratch_.residual.data() ? scratch_.normed.data() : scratch_.residual.data();
  rms_norm_rows(resid, weights_.output_norm.data(), normed, n, c.n_embd, static_cast<float>(c.eps));
  return weights_.output->forward(normed, logits, n);
}

Status MambaModel::embed(std::span<const TokenId> tokens, float* hidden) noexcept {
  return guard([&] { return weights_.token_embd.lookup_tokens(tokens, config_.vocab, "mamba", hidden); });
}

Status MambaModel::forward_layers(const Batch& batch, SequenceMemory& memory, int32_t first_layer, int32_t last_layer,
                                  float* hidden) noexcept {
  return guard([&]() -> Status {
    TESSERA_RETURN_IF_ERROR(blocks::check_layer_range("mamba", first_layer, last_layer, config_.n_layer, hidden));
    TESSERA_RETURN_IF_ERROR(prepare(batch, memory));
    int64_t n = plan_.n_rows();
    float* resid = hidden;  // [n, n_embd], the caller's
    for (int32_t l = first_layer; l < last_layer; ++l) {
      bool go_on = true;
      TESSERA_RETURN_IF_ERROR(run_layer(batch, l, memory, resid, n, /*narrow=*/false, go_on));
    }
    return Status::Ok();
  });
}

Status MambaModel::run_layer(const Batch& batch, int64_t l, SequenceMemory& memory, float*& resid, int64_t& n,
                             bool narrow, bool& go_on) {
  const MambaConfig& c = config_;
  const int64_t d = c.n_embd, inner = c.d_inner;
  const auto eps = static_cast<float>(c.eps);
  // The buffer that is not the residual stream (they swap when the last layer narrows).
  float* normed = resid == scratch_.normed.data() ? scratch_.residual.data() : scratch_.normed.data();
  float* y = scratch_.y.data();  // [n, d_inner]
  const MambaLayerWeights& lw = weights_.layers[static_cast<size_t>(l)];
  TESSERA_RETURN_IF_ERROR(gather_states(batch, memory, static_cast<int32_t>(l)));
  rms_norm_rows(resid, lw.norm.data(), normed, n, d, eps);
  TESSERA_RETURN_IF_ERROR(lw.in_proj->forward(normed, scratch_.proj.data(), n));
  convolve(batch, lw, n);
  if (c.mamba2()) {
    mix_mamba2(batch, lw, n);
  } else {
    TESSERA_RETURN_IF_ERROR(mix_mamba1(batch, lw, n));
  }
  float* y_rows = y;
  if (narrow) {
    // Every row has advanced its state; only the rows whose logits are
    // asked go on (gathered in output order into buffers now free).
    if (plan_.logit_rows.empty()) {
      go_on = false;
      return Status::Ok();
    }
    float* y_out = scratch_.conv.data();  // [n_out, d_inner]; conv_channels >= d_inner
    blocks::gather_rows(plan_.logit_rows, y, y_out, inner);
    blocks::gather_rows(plan_.logit_rows, resid, normed, d);
    std::swap(resid, normed);
    y_rows = y_out;
    n = static_cast<int64_t>(plan_.logit_rows.size());
  }
  TESSERA_RETURN_IF_ERROR(lw.out_proj->forward(y_rows, normed, n));
  add_inplace(resid, normed, n * d);
  return Status::Ok();
}

}  // namespace tessera::mamba
