#include "transformer_weights.hpp"

#include <string>

#include "tessera/blocks/tensor_checks.hpp"
#include "tessera/blocks/weight_loading.hpp"

namespace tessera::transformer {

using blocks::expect_optional_tensor;
using blocks::expect_tensor;
using blocks::load_vector;
using blocks::make_linear;

namespace {

Status check_all_shapes(const WeightStore& w, const ModelConfig& c) {
  const int64_t d = c.n_embd, q = c.q_dim(), kv = c.kv_dim(), ff = c.n_ff;
  const auto blk = [&](int64_t layer, const char* tensor) { return c.names.layer(layer, tensor); };
  TESSERA_RETURN_IF_ERROR(expect_tensor(w, c.names.global("token_embd.weight"), {c.vocab, d}));
  TESSERA_RETURN_IF_ERROR(expect_tensor(w, c.names.global("output_norm.weight"), {d}));
  TESSERA_RETURN_IF_ERROR(expect_optional_tensor(w, c.names.global("output.weight"), {c.vocab, d}));
  for (int64_t l = 0; l < c.n_layer; ++l) {
    TESSERA_RETURN_IF_ERROR(expect_tensor(w, blk(l, "attn_norm.weight"), {d}));
    TESSERA_RETURN_IF_ERROR(expect_tensor(w, blk(l, "attn_q.weight"), {q, d}));
    TESSERA_RETURN_IF_ERROR(expect_tensor(w, blk(l, "attn_k.weight"), {kv, d}));
    TESSERA_RETURN_IF_ERROR(expect_tensor(w, blk(l, "attn_v.weight"), {kv, d}));
    TESSERA_RETURN_IF_ERROR(expect_tensor(w, blk(l, "attn_output.weight"), {d, q}));
    TESSERA_RETURN_IF_ERROR(expect_optional_tensor(w, blk(l, "attn_q.bias"), {q}));
    TESSERA_RETURN_IF_ERROR(expect_optional_tensor(w, blk(l, "attn_k.bias"), {kv}));
    TESSERA_RETURN_IF_ERROR(expect_optional_tensor(w, blk(l, "attn_v.bias"), {kv}));
    TESSERA_RETURN_IF_ERROR(expect_optional_tensor(w, blk(l, "attn_output.bias"), {d}));
    TESSERA_RETURN_IF_ERROR(expect_tensor(w, blk(l, "ffn_norm.weight"), {d}));
    TESSERA_RETURN_IF_ERROR(expect_tensor(w, blk(l, "ffn_gate.weight"), {ff, d}));
    TESSERA_RETURN_IF_ERROR(expect_tensor(w, blk(l, "ffn_up.weight"), {ff, d}));
    TESSERA_RETURN_IF_ERROR(expect_tensor(w, blk(l, "ffn_down.weight"), {d, ff}));
  }
  return Status::Ok();
}

}  // namespace

Result<TransformerWeights> load_weights(ModelBuilder& builder, const ModelConfig& c) {
  const WeightStore& w = builder.weights();
  TESSERA_RETURN_IF_ERROR(check_all_shapes(w, c));

  const auto blk = [&](int64_t layer, const char* tensor) { return c.names.layer(layer, tensor); };
  TransformerWeights tw;
  auto embd = blocks::EmbeddingTable::create(builder, *w.find(c.names.global("token_embd.weight")));
  if (!embd.ok()) return embd.status();
  tw.token_embd = std::move(embd).value();
  tw.layers.resize(static_cast<size_t>(c.n_layer));
  const int64_t d = c.n_embd, q = c.q_dim(), kv = c.kv_dim(), ff = c.n_ff;
  uint64_t& bytes = tw.weight_bytes;
  for (int64_t l = 0; l < c.n_layer; ++l) {
    LayerWeights& lw = tw.layers[static_cast<size_t>(l)];
    TESSERA_RETURN_IF_ERROR(load_vector(builder, blk(l, "attn_norm.weight"), d, lw.attn_norm));
    TESSERA_RETURN_IF_ERROR(make_linear(builder, blk(l, "attn_q.weight"), blk(l, "attn_q.bias"), q, d, lw.attn_q, bytes));
    TESSERA_RETURN_IF_ERROR(make_linear(builder, blk(l, "attn_k.weight"), blk(l, "attn_k.bias"), kv, d, lw.attn_k, bytes));
    TESSERA_RETURN_IF_ERROR(make_linear(builder, blk(l, "attn_v.weight"), blk(l, "attn_v.bias"), kv, d, lw.attn_v, bytes));
    TESSERA_RETURN_IF_ERROR(make_linear(builder, blk(l, "attn_output.weight"), blk(l, "attn_output.bias"), d, q, lw.attn_output, bytes));
    TESSERA_RETURN_IF_ERROR(load_vector(builder, blk(l, "ffn_norm.weight"), d, lw.ffn_norm));
    TESSERA_RETURN_IF_ERROR(make_linear(builder, blk(l, "ffn_gate.weight"), {}, ff, d, lw.ffn_gate, bytes));
    TESSERA_RETURN_IF_ERROR(make_linear(builder, blk(l, "ffn_up.weight"), {}, ff, d, lw.ffn_up, bytes));
    TESSERA_RETURN_IF_ERROR(make_linear(builder, blk(l, "ffn_down.weight"), {}, d, ff, lw.ffn_down, bytes));
  }
  TESSERA_RETURN_IF_ERROR(load_vector(builder, c.names.global("output_norm.weight"), d, tw.output_norm));
  tw.tied_output = w.find(c.names.global("output.weight")) == nullptr;
  const std::string output_name = c.names.global(tw.tied_output ? "token_embd.weight" : "output.weight");
  TESSERA_RETURN_IF_ERROR(blocks::make_output_linear(builder, output_name, c.vocab, d, tw.output, bytes));
  return tw;
}

}  // namespace tessera::transformer
