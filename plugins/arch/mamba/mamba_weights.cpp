#include "mamba_weights.hpp"

#include <cmath>
#include <string>

#include "tessera/blocks/tensor_checks.hpp"
#include "tessera/blocks/weight_loading.hpp"

namespace tessera::mamba {

using blocks::expect_optional_tensor;
using blocks::expect_tensor;
using blocks::expect_tensor_elements;
using blocks::load_vector;
using blocks::make_linear;

namespace {

// Which stored name a weight has, by the file's convention.
struct Names {
  bool gguf = true;

  std::string embedding() const { return gguf ? "token_embd.weight" : "backbone.embeddings.weight"; }
  std::string output_norm() const { return gguf ? "output_norm.weight" : "backbone.norm_f.weight"; }
  std::string output() const { return gguf ? "output.weight" : "lm_head.weight"; }
  std::string norm(int64_t l) const { return layer(l, "attn_norm.weight", "norm.weight"); }
  // A mixer tensor: llama.cpp's name after "blk.N.", transformers' after "backbone.layers.N.mixer.".
  std::string mixer(int64_t l, std::string_view gguf_name, std::string_view hf_name) const {
    return layer(l, gguf_name, "mixer." + std::string(hf_name));
  }

 private:
  std::string layer(int64_t l, std::string_view gguf_name, std::string_view hf_name) const {
    return gguf ? "blk." + std::to_string(l) + "." + std::string(gguf_name)
                : "backbone.layers." + std::to_string(l) + "." + std::string(hf_name);
  }
};

struct LayerNames {
  std::string norm, in_proj, in_bias, conv, conv_bias, x_proj, dt_proj, dt_bias, a, d, gated_norm, out_proj, out_bias;
};

LayerNames layer_names(const Names& n, int64_t l, bool mamba2) {
  LayerNames r;
  r.norm = n.norm(l);
  r.in_proj = n.mixer(l, "ssm_in.weight", "in_proj.weight");
  r.in_bias = n.mixer(l, "ssm_in.bias", "in_proj.bias");
  r.conv = n.mixer(l, "ssm_conv1d.weight", "conv1d.weight");
  r.conv_bias = n.mixer(l, "ssm_conv1d.bias", "conv1d.bias");
  r.x_proj = n.mixer(l, "ssm_x.weight", "x_proj.weight");
  r.dt_proj = n.mixer(l, "ssm_dt.weight", "dt_proj.weight");
  r.dt_bias = n.mixer(l, "ssm_dt.bias", mamba2 ? "dt_bias" : "dt_proj.bias");
  r.a = n.mixer(l, "ssm_a", "A_log");
  r.d = n.mixer(l, "ssm_d", "D");
  r.gated_norm = n.mixer(l, "ssm_norm.weight", "norm.weight");
  r.out_proj = n.mixer(l, "ssm_out.weight", "out_proj.weight");
  r.out_bias = n.mixer(l, "ssm_out.bias", "out_proj.bias");
  return r;
}

// The convolution is [channels, d_conv] in GGUF and [channels, 1, d_conv] in
// transformers: the same values in the same order.
Status expect_conv(const WeightStore& w, const std::string& name, int64_t channels, int64_t d_conv) {
  TESSERA_RETURN_IF_ERROR(expect_tensor_elements(w, name, channels * d_conv));
  const TensorRef* t = w.find(name);
  if (t->cols() != d_conv)
    return InvalidArgument(w.source() + ": tensor " + name + " has shape " + blocks::shape_string(*t) +
                           ", expected a last dimension of " + std::to_string(d_conv) + " taps");
  return Status::Ok();
}

Status check_all_shapes(const WeightStore& w, const MambaConfig& c, const Names& names) {
  const int64_t d = c.n_embd, inner = c.d_inner, channels = c.conv_channels();
  TESSERA_RETURN_IF_ERROR(expect_tensor(w, names.embedding(), {c.vocab, d}));
  TESSERA_RETURN_IF_ERROR(expect_tensor(w, names.output_norm(), {d}));
  TESSERA_RETURN_IF_ERROR(expect_optional_tensor(w, names.output(), {c.vocab, d}));
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const LayerNames n = layer_names(names, l, c.mamba2());
    TESSERA_RETURN_IF_ERROR(expect_tensor(w, n.norm, {d}));
    TESSERA_RETURN_IF_ERROR(expect_tensor(w, n.in_proj, {c.in_proj_width(), d}));
    TESSERA_RETURN_IF_ERROR(expect_optional_tensor(w, n.in_bias, {c.in_proj_width()}));
    TESSERA_RETURN_IF_ERROR(expect_conv(w, n.conv, channels, c.d_conv));
    TESSERA_RETURN_IF_ERROR(expect_optional_tensor(w, n.conv_bias, {channels}));
    TESSERA_RETURN_IF_ERROR(expect_tensor(w, n.out_proj, {d, inner}));
    TESSERA_RETURN_IF_ERROR(expect_optional_tensor(w, n.out_bias, {d}));
    if (c.mamba2()) {
      TESSERA_RETURN_IF_ERROR(expect_tensor_elements(w, n.dt_bias, c.n_head));
      TESSERA_RETURN_IF_ERROR(expect_tensor_elements(w, n.a, c.n_head));
      TESSERA_RETURN_IF_ERROR(expect_tensor_elements(w, n.d, c.n_head));
      TESSERA_RETURN_IF_ERROR(expect_tensor_elements(w, n.gated_norm, inner));
    } else {
      TESSERA_RETURN_IF_ERROR(expect_tensor(w, n.x_proj, {c.x_proj_width(), inner}));
      TESSERA_RETURN_IF_ERROR(expect_tensor(w, n.dt_proj, {inner, c.dt_rank}));
      TESSERA_RETURN_IF_ERROR(expect_tensor(w, n.dt_bias, {inner}));
      TESSERA_RETURN_IF_ERROR(expect_tensor_elements(w, n.a, inner * c.d_state));
      TESSERA_RETURN_IF_ERROR(expect_tensor_elements(w, n.d, inner));
    }
  }
  return Status::Ok();
}

// [channels, d_conv] as stored -> [d_conv, channels], so a token's loop runs over contiguous channels.
Status load_conv(ModelBuilder& b, const LayerNames& n, const MambaConfig& c, MambaLayerWeights& lw) {
  const int64_t channels = c.conv_channels();
  std::vector<float> stored;
  TESSERA_RETURN_IF_ERROR(load_vector(b, n.conv, channels * c.d_conv, stored));
  lw.conv_weight.assign(stored.size(), 0.0f);
  for (int64_t ch = 0; ch < channels; ++ch)
    for (int64_t k = 0; k < c.d_conv; ++k)
      lw.conv_weight[static_cast<size_t>(k * channels + ch)] = stored[static_cast<size_t>(ch * c.d_conv + k)];
  if (b.weights().find(n.conv_bias) != nullptr) return load_vector(b, n.conv_bias, channels, lw.conv_bias);
  lw.conv_bias.assign(static_cast<size_t>(channels), 0.0f);
  return Status::Ok();
}

// GGUF stores A itself; transformers store A_log.
Status load_a(ModelBuilder& b, const LayerNames& n, const MambaConfig& c, int64_t count, MambaLayerWeights& lw) {
  TESSERA_RETURN_IF_ERROR(load_vector(b, n.a, count, lw.a));
  if (c.format == ModelFormat::safetensors)
    for (float& v : lw.a) v = -std::exp(v);
  return Status::Ok();
}

std::string present_or_empty(const WeightStore& w, const std::string& name) {
  return w.find(name) != nullptr ? name : std::string();
}

}  // namespace

Result<MambaWeights> load_mamba_weights(ModelBuilder& builder, const MambaConfig& c) {
  const WeightStore& w = builder.weights();
  const Names names{c.format == ModelFormat::gguf};
  TESSERA_RETURN_IF_ERROR(check_all_shapes(w, c, names));

  MambaWeights mw;
  auto embd = blocks::EmbeddingTable::create(builder, *w.find(names.embedding()));
  if (!embd.ok()) return embd.status();
  mw.token_embd = std::move(embd).value();
  mw.layers.resize(static_cast<size_t>(c.n_layer));
  const int64_t d = c.n_embd, inner = c.d_inner;
  uint64_t& bytes = mw.weight_bytes;
  for (int64_t l = 0; l < c.n_layer; ++l) {
    MambaLayerWeights& lw = mw.layers[static_cast<size_t>(l)];
    const LayerNames n = layer_names(names, l, c.mamba2());
    TESSERA_RETURN_IF_ERROR(load_vector(builder, n.norm, d, lw.norm));
    TESSERA_RETURN_IF_ERROR(
        make_linear(builder, n.in_proj, present_or_empty(w, n.in_bias), c.in_proj_width(), d, lw.in_proj, bytes));
    TESSERA_RETURN_IF_ERROR(load_conv(builder, n, c, lw));
    if (c.mamba2()) {
      TESSERA_RETURN_IF_ERROR(load_vector(builder, n.dt_bias, c.n_head, lw.dt_bias));
      TESSERA_RETURN_IF_ERROR(load_a(builder, n, c, c.n_head, lw));
      TESSERA_RETURN_IF_ERROR(load_vector(builder, n.d, c.n_head, lw.d));
      TESSERA_RETURN_IF_ERROR(load_vector(builder, n.gated_norm, inner, lw.gated_norm));
    } else {
      TESSERA_RETURN_IF_ERROR(make_linear(builder, n.x_proj, {}, c.x_proj_width(), inner, lw.x_proj, bytes));
      TESSERA_RETURN_IF_ERROR(make_linear(builder, n.dt_proj, n.dt_bias, inner, c.dt_rank, lw.dt_proj, bytes));
      TESSERA_RETURN_IF_ERROR(load_a(builder, n, c, inner * c.d_state, lw));
      TESSERA_RETURN_IF_ERROR(load_vector(builder, n.d, inner, lw.d));
    }
    TESSERA_RETURN_IF_ERROR(
        make_linear(builder, n.out_proj, present_or_empty(w, n.out_bias), d, inner, lw.out_proj, bytes));
  }
  TESSERA_RETURN_IF_ERROR(load_vector(builder, names.output_norm(), d, mw.output_norm));
  const std::string output_name = w.find(names.output()) != nullptr ? names.output() : names.embedding();
  TESSERA_RETURN_IF_ERROR(blocks::make_output_linear(builder, output_name, c.vocab, d, mw.output, bytes));
  return mw;
}

}  // namespace tessera::mamba
