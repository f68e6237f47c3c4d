// Hyper-parameters and tensor names: what the plugin reads of a GGUF file's
// "<arch>.*" keys and of a Hugging Face config.json (as the core flattens it),
// and how it names a Hugging Face checkpoint's tensors.
#include <gtest/gtest.h>

#include <limits>

#include <string>
#include <vector>

#include "gguf_layout.hpp"
#include "llama_hparams.hpp"
#include "model_config.hpp"
#include "tensor_names.hpp"
#include "tessera/blocks/testing/map_metadata.hpp"

namespace tessera::transformer {
namespace {

using blocks::RopeScaling;
using blocks::RopeStyle;
using blocks::testing::MapMetadata;

// Only metadata and tensor names: what reading hyper-parameters looks at.
class MetaStore final : public WeightStore {
 public:
  MetaStore(ModelFormat format, std::string arch, std::string source = "m.gguf")
      : format_(format), arch_(std::move(arch)), source_(std::move(source)) {}
  ModelFormat format() const noexcept override { return format_; }
  std::string_view architecture() const noexcept override { return arch_; }
  const Metadata& metadata() const noexcept override { return meta; }
  const TensorRef* find(std::string_view name) const noexcept override {
    for (const TensorRef& t : tensors_)
      if (t.name == name) return &t;
    return nullptr;
  }
  std::span<const TensorRef> tensors() const noexcept override { return tensors_; }
  const std::string& source() const noexcept override { return source_; }
  void add_tensor(const std::string& name, int64_t rows = 0) {
    TensorRef t;
    t.name = name;
    if (rows > 0) {
      t.ndim = 1;
      t.shape[0] = rows;
    }
    tensors_.push_back(t);
  }

  MapMetadata meta;

 private:
  ModelFormat format_;
  std::string arch_;
  std::string source_;
  std::vector<TensorRef> tensors_;
};

Result<LlamaHParams> read(const WeightStore& store) {
  std::vector<std::string> notes;
  return read_llama_hparams(store, notes);
}

MetaStore qwen2_gguf() {
  MetaStore s(ModelFormat::gguf, "qwen2", "q.gguf");
  s.meta.set("qwen2.block_count", int64_t{2});
  s.meta.set("qwen2.embedding_length", int64_t{64});
  s.meta.set("qwen2.attention.head_count", int64_t{8});
  s.meta.set("qwen2.attention.key_length", int64_t{16});
  s.meta.set("qwen2.vocab_size", int64_t{100});
  s.meta.set("qwen2.context_length", int64_t{32768});
  s.meta.set("qwen2.rope.scaling.type", std::string("linear"));
  s.meta.set("qwen2.rope.scaling.factor", 4.0);
  s.meta.set("qwen2.rope.scaling.original_context_length", int64_t{4096});
  return s;
}

TEST(LlamaHparams, GgufKeys) {
  MetaStore s = qwen2_gguf();
  s.add_tensor("output.weight");
  auto hp = read(s);
  ASSERT_TRUE(hp.ok()) << hp.status().message();
  EXPECT_EQ(hp->rope_style, RopeStyle::neox) << "qwen2's converter keeps Q/K unpermuted";
  EXPECT_EQ(hp->head_count_kv, 8) << "defaults to head_count";
  EXPECT_EQ(hp->head_dim, 16);
  EXPECT_EQ(hp->vocab_size, 100);
  EXPECT_EQ(hp->rope_scaling, RopeScaling::linear);
  EXPECT_EQ(hp->rope_scaling_factor, 4.0);
  EXPECT_EQ(hp->rope_original_context, 4096);
  EXPECT_FALSE(hp->tied_embeddings);

  MetaStore t = qwen2_gguf();  // no output.weight: tied
  t.meta.set("tokenizer.ggml.tokens", std::vector<std::string>(7, "x"));
  hp = read(t);
  ASSERT_TRUE(hp.ok());
  EXPECT_TRUE(hp->tied_embeddings);
  EXPECT_EQ(hp->vocab_size, 7) << "the token list is the vocabulary";

  MetaStore bad = qwen2_gguf();
  bad.meta.set("qwen2.rope.scaling.type", std::string("weird"));
  hp = read(bad);
  ASSERT_FALSE(hp.ok());
  EXPECT_NE(hp.status().message().find("RoPE scaling type 'weird'"), std::string::npos) << hp.status().message();

  MetaStore missing = qwen2_gguf();
  missing.meta.erase("qwen2.attention.head_count");
  hp = read(missing);
  ASSERT_FALSE(hp.ok());
  EXPECT_EQ(hp.status().code(), StatusCode::corrupt_data);
  EXPECT_NE(hp.status().message().find("q.gguf: metadata 'qwen2.attention.head_count' is required"),
            std::string::npos)
      << hp.status().message();
}

TEST(LlamaHparams, GgufSlidingWindowCapsTheContextWithANote) {
  MetaStore s = qwen2_gguf();
  s.meta.set("qwen2.attention.sliding_window", int64_t{4096});
  std::vector<std::string> notes;
  auto hp = read_llama_hparams(s, notes);
  ASSERT_TRUE(hp.ok());
  EXPECT_EQ(hp->context_length, 4096);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("limited to 4096 (was 32768)"), std::string::npos) << notes[0];
}

// config.json as the core flattens it: nested objects become dotted keys.
MetaStore llama_hf() {
  MetaStore s(ModelFormat::safetensors, "LlamaForCausalLM", "cfg");
  s.meta.set("hidden_size", int64_t{32});
  s.meta.set("intermediate_size", int64_t{64});
  s.meta.set("num_attention_heads", int64_t{4});
  s.meta.set("num_key_value_heads", int64_t{2});
  s.meta.set("num_hidden_layers", int64_t{1});
  s.meta.set("rms_norm_eps", 1e-05);
  s.meta.set("rope_theta", 500000.0);
  s.meta.set("max_position_embeddings", int64_t{131072});
  s.meta.set("vocab_size", int64_t{8});
  s.meta.set("tie_word_embeddings", false);
  s.meta.set("rope_scaling.rope_type", std::string("llama3"));
  s.meta.set("rope_scaling.factor", 8.0);
  s.meta.set("rope_scaling.original_max_position_embeddings", int64_t{8192});
  s.meta.set("rope_scaling.low_freq_factor", 1.0);
  s.meta.set("rope_scaling.high_freq_factor", 4.0);
  s.add_tensor("lm_head.weight");
  return s;
}

TEST(LlamaHparams, HuggingFaceConfig) {
  auto hp = read(llama_hf());
  ASSERT_TRUE(hp.ok()) << hp.status().message();
  EXPECT_EQ(hp->block_count, 1);
  EXPECT_EQ(hp->embedding_length, 32);
  EXPECT_EQ(hp->feed_forward_length, 64);
  EXPECT_EQ(hp->head_count, 4);
  EXPECT_EQ(hp->head_count_kv, 2);
  EXPECT_EQ(hp->context_length, 131072);
  EXPECT_EQ(hp->vocab_size, 8);
  EXPECT_EQ(hp->rope_freq_base, 500000.0);
  EXPECT_EQ(hp->rope_style, RopeStyle::neox) << "Hugging Face keeps Q/K rows unpermuted";
  EXPECT_EQ(hp->rope_scaling, RopeScaling::llama3);
  EXPECT_EQ(hp->rope_scaling_factor, 8.0);
  EXPECT_EQ(hp->rope_original_context, 8192);
  EXPECT_FALSE(hp->tied_embeddings);

  MetaStore q(ModelFormat::safetensors, "Qwen2ForCausalLM", "cfg");
  q.meta = llama_hf().meta;
  q.meta.set("tie_word_embeddings", true);
  q.meta.set("head_dim", int64_t{16});
  q.meta.erase("rope_scaling.rope_type");
  q.meta.set("rope_scaling.type", std::string("linear"));
  q.meta.set("rope_scaling.factor", 2.0);
  q.meta.erase("num_key_value_heads");
  hp = read(q);
  ASSERT_TRUE(hp.ok()) << hp.status().message();
  EXPECT_TRUE(hp->tied_embeddings);
  EXPECT_EQ(hp->head_dim, 16);
  EXPECT_EQ(hp->head_count_kv, 4);
  EXPECT_EQ(hp->rope_scaling, RopeScaling::linear);
  EXPECT_EQ(hp->rope_scaling_factor, 2.0);
  EXPECT_NEAR(hp->rms_norm_eps, 1e-5, 1e-15);

  MetaStore defaults(ModelFormat::safetensors, "qwen2", "cfg");  // model_type only
  defaults.meta = llama_hf().meta;
  defaults.meta.erase("rms_norm_eps");
  hp = read(defaults);
  ASSERT_TRUE(hp.ok()) << hp.status().message();
  EXPECT_NEAR(hp->rms_norm_eps, 1e-6, 1e-15) << "Hugging Face's default, not GGUF's";
  EXPECT_TRUE(hp->tied_embeddings) << "no lm_head.weight";
}

TEST(LlamaHparams, HuggingFaceSlidingWindow) {
  MetaStore m(ModelFormat::safetensors, "MistralForCausalLM", "cfg");
  m.meta = llama_hf().meta;
  m.meta.set("max_position_embeddings", int64_t{32768});
  m.meta.set("sliding_window", int64_t{4096});
  EXPECT_EQ(read(m)->context_length, 4096);
  m.meta.set("sliding_window", int64_t{65536});  // wider than the context: no effect
  EXPECT_EQ(read(m)->context_length, 32768);
  m.meta.set("sliding_window", std::string("wide"));
  EXPECT_FALSE(read(m).ok());

  MetaStore q(ModelFormat::safetensors, "Qwen2ForCausalLM", "cfg");
  q.meta = llama_hf().meta;
  q.meta.set("max_position_embeddings", int64_t{32768});
  q.meta.set("sliding_window", int64_t{4096});
  q.meta.set("use_sliding_window", false);
  EXPECT_EQ(read(q)->context_length, 32768) << "Qwen2 applies its window only with use_sliding_window";
  q.meta.set("use_sliding_window", true);
  EXPECT_EQ(read(q)->context_length, 4096);
}

TEST(LlamaHparams, ClearErrorsNameTheFileAndTheKey) {
  auto expect = [](const MetaStore& s, const std::string& fragment) {
    auto r = read(s);
    ASSERT_FALSE(r.ok()) << fragment;
    EXPECT_NE(r.status().message().find("cfg"), std::string::npos);
    EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().message();
  };
  MetaStore gpt2(ModelFormat::safetensors, "GPT2LMHeadModel", "cfg");
  expect(gpt2, "architecture 'GPT2LMHeadModel' is not served");
  MetaStore b = llama_hf();
  b.meta.erase("hidden_size");
  expect(b, "'hidden_size' is required but missing");
  MetaStore c = llama_hf();
  c.meta.set("num_hidden_layers", int64_t{-3});
  expect(c, "'num_hidden_layers' must be a positive integer");
  MetaStore e = llama_hf();
  e.meta.set("rope_scaling.rope_type", std::string("dynamic"));
  expect(e, "RoPE scaling type 'dynamic' is not supported");
  MetaStore f = llama_hf();
  f.meta.set("rms_norm_eps", std::string("small"));
  expect(f, "'rms_norm_eps' must be a finite number");
  // config.json may spell Infinity (Python's json); no hyper-parameter is one.
  MetaStore inf = llama_hf();
  inf.meta.set("rope_theta", std::numeric_limits<double>::infinity());
  expect(inf, "'rope_theta' must be a finite number");
  MetaStore g = llama_hf();
  g.meta.set("num_key_value_heads", int64_t{3});
  auto config = resolve_config(g);
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("not a multiple of head_count_kv 3"), std::string::npos)
      << config.status().message();
}

TEST(TensorNames, GgufNamesAreStoredAsThey) {
  const TensorNames gguf(ModelFormat::gguf);
  EXPECT_EQ(gguf.global("token_embd.weight"), "token_embd.weight");
  EXPECT_EQ(gguf.layer(3, "attn_q.weight"), "blk.3.attn_q.weight");
}

TEST(TensorNames, HuggingFaceNames) {
  const TensorNames hf(ModelFormat::safetensors);
  EXPECT_EQ(hf.global("token_embd.weight"), "model.embed_tokens.weight");
  EXPECT_EQ(hf.global("output_norm.weight"), "model.norm.weight");
  EXPECT_EQ(hf.global("output.weight"), "lm_head.weight");
  EXPECT_EQ(hf.layer(0, "attn_q.weight"), "model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(hf.layer(12, "attn_q.bias"), "model.layers.12.self_attn.q_proj.bias");
  EXPECT_EQ(hf.layer(3, "attn_output.weight"), "model.layers.3.self_attn.o_proj.weight");
  EXPECT_EQ(hf.layer(7, "ffn_gate.weight"), "model.layers.7.mlp.gate_proj.weight");
  EXPECT_EQ(hf.layer(7, "ffn_down.weight"), "model.layers.7.mlp.down_proj.weight");
  EXPECT_EQ(hf.layer(7, "attn_norm.weight"), "model.layers.7.input_layernorm.weight");
  EXPECT_EQ(hf.layer(7, "ffn_norm.weight"), "model.layers.7.post_attention_layernorm.weight");
}

TEST(TensorNames, HuggingFaceToGgufIsTheInverse) {
  const TensorNames hf(ModelFormat::safetensors);
  for (const char* part : {"attn_q.weight", "attn_k.bias", "attn_v.weight", "attn_output.weight", "ffn_gate.weight",
                           "ffn_up.weight", "ffn_down.weight", "attn_norm.weight", "ffn_norm.weight"})
    EXPECT_EQ(gguf_name_of_hf_tensor(hf.layer(5, part)), "blk.5." + std::string(part));
  for (const char* g : {"token_embd.weight", "output_norm.weight", "output.weight"})
    EXPECT_EQ(gguf_name_of_hf_tensor(hf.global(g)), std::string(g));
  EXPECT_EQ(gguf_name_of_hf_tensor("model.layers.x.mlp.up_proj.weight"), std::nullopt);
  EXPECT_EQ(gguf_name_of_hf_tensor("model.layers.1.self_attn.rotary_emb.inv_freq"), std::nullopt);
  EXPECT_EQ(gguf_name_of_hf_tensor("model.layers..mlp.up_proj.weight"), std::nullopt);
  EXPECT_EQ(gguf_name_of_hf_tensor(".weight"), std::nullopt);
}

// ---- the GGUF form of a Hugging Face checkpoint (gguf_layout.hpp) ----

// llama_hf() without its llama3 RoPE scaling, and the tensors of its one layer.
MetaStore llama_hf_with_tensors(const std::string& arch = "LlamaForCausalLM") {
  MetaStore s(ModelFormat::safetensors, arch, "cfg");
  s.meta = llama_hf().meta;
  for (const char* key : {"rope_scaling.rope_type", "rope_scaling.factor", "rope_scaling.original_max_position_embeddings",
                          "rope_scaling.low_freq_factor", "rope_scaling.high_freq_factor"})
    s.meta.erase(key);
  s.add_tensor("lm_head.weight", 8);
  s.add_tensor("model.norm.weight", 32);
  s.add_tensor("model.layers.0.self_attn.k_proj.weight", 2 * 8);
  s.add_tensor("model.layers.0.self_attn.q_proj.weight", 4 * 8);
  s.add_tensor("model.layers.0.self_attn.rotary_emb.inv_freq", 4);
  s.add_tensor("model.layers.0.self_attn.v_proj.weight", 2 * 8);
  s.add_tensor("model.layers.0.input_layernorm.weight", 32);
  s.add_tensor("model.embed_tokens.weight", 8);
  return s;
}

const GgufKeyValue* key_of(const GgufLayout& layout, std::string_view key) {
  for (const GgufKeyValue& kv : layout.metadata)
    if (kv.key == key) return &kv;
  return nullptr;
}

TEST(GgufLayout, LlamaInterleavesQueryAndKeyHeadsInLlamaCppsOrder) {
  auto layout = gguf_layout_of(llama_hf_with_tensors());
  ASSERT_TRUE(layout.ok()) << layout.status().message();
  EXPECT_EQ(layout->architecture, "llama");
  std::vector<std::tuple<std::string, std::string, int64_t>> tensors;
  for (const GgufTensorPlan& t : layout->tensors) tensors.emplace_back(t.name, t.source, t.interleave_heads);
  const std::vector<std::tuple<std::string, std::string, int64_t>> expected = {
      {"token_embd.weight", "model.embed_tokens.weight", 0},
      {"blk.0.attn_norm.weight", "model.layers.0.input_layernorm.weight", 0},
      {"blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight", 4},
      {"blk.0.attn_k.weight", "model.layers.0.self_attn.k_proj.weight", 2},
      {"blk.0.attn_v.weight", "model.layers.0.self_attn.v_proj.weight", 0},
      {"output_norm.weight", "model.norm.weight", 0},
      {"output.weight", "lm_head.weight", 0}};
  EXPECT_EQ(tensors, expected);
  ASSERT_EQ(layout->notes.size(), 1u);
  EXPECT_NE(layout->notes[0].find("rotary_emb.inv_freq left out"), std::string::npos) << layout->notes[0];

  // The keys llama.cpp reads, in the types it insists on.
  const auto u32 = [&](std::string_view key) -> int64_t {
    const GgufKeyValue* kv = key_of(*layout, key);
    if (kv == nullptr || !std::holds_alternative<uint32_t>(kv->value)) return -1;
    return std::get<uint32_t>(kv->value);
  };
  EXPECT_EQ(u32("llama.block_count"), 1);
  EXPECT_EQ(u32("llama.embedding_length"), 32);
  EXPECT_EQ(u32("llama.feed_forward_length"), 64);
  EXPECT_EQ(u32("llama.attention.head_count"), 4);
  EXPECT_EQ(u32("llama.attention.head_count_kv"), 2);
  EXPECT_EQ(u32("llama.context_length"), 131072);
  EXPECT_EQ(u32("llama.rope.dimension_count"), 8);
  EXPECT_EQ(u32("llama.vocab_size"), 8);
  EXPECT_EQ(key_of(*layout, "llama.attention.key_length"), nullptr) << "head_dim is embedding_length / head_count";
  const GgufKeyValue* base = key_of(*layout, "llama.rope.freq_base");
  ASSERT_NE(base, nullptr);
  EXPECT_EQ(std::get<float>(base->value), 500000.0f);
  const GgufKeyValue* eps = key_of(*layout, "llama.attention.layer_norm_rms_epsilon");
  ASSERT_NE(eps, nullptr);
  EXPECT_EQ(std::get<float>(eps->value), 1e-5f);

  // Mistral 7B v0.1: a window of 4096 in a context of 32768. The file says
  // both (Tessera caps its context again from the window key on reading).
  MetaStore m = llama_hf_with_tensors("MistralForCausalLM");
  m.meta.set("max_position_embeddings", int64_t{32768});
  m.meta.set("sliding_window", int64_t{4096});
  auto mistral = gguf_layout_of(m);
  ASSERT_TRUE(mistral.ok()) << mistral.status().message();
  EXPECT_EQ(mistral->architecture, "llama") << "llama.cpp's converter writes Mistral as llama";
  const GgufKeyValue* context = key_of(*mistral, "llama.context_length");
  const GgufKeyValue* window = key_of(*mistral, "llama.attention.sliding_window");
  ASSERT_TRUE(context && window);
  EXPECT_EQ(std::get<uint32_t>(context->value), 32768u) << "the trained context, not the capped one";
  EXPECT_EQ(std::get<uint32_t>(window->value), 4096u);
}

TEST(GgufLayout, Qwen2KeepsSplitHalvesAndSaysItsHeadSize) {
  MetaStore q = llama_hf_with_tensors("Qwen2ForCausalLM");
  q.meta.set("head_dim", int64_t{4});  // 4 heads of 4: narrower than 32 / 4
  MetaStore rows(ModelFormat::safetensors, "Qwen2ForCausalLM", "cfg");
  rows.meta = q.meta;
  for (const TensorRef& t : q.tensors()) {
    const bool projection = t.name.find("q_proj") != std::string::npos || t.name.find("k_proj") != std::string::npos ||
                            t.name.find("v_proj") != std::string::npos;
    rows.add_tensor(t.name, projection ? t.shape[0] / 2 : t.shape[0]);
  }
  auto layout = gguf_layout_of(rows);
  ASSERT_TRUE(layout.ok()) << layout.status().message();
  EXPECT_EQ(layout->architecture, "qwen2");
  for (const GgufTensorPlan& t : layout->tensors) EXPECT_EQ(t.interleave_heads, 0) << t.name;
  const GgufKeyValue* key_length = key_of(*layout, "qwen2.attention.key_length");
  ASSERT_NE(key_length, nullptr);
  EXPECT_EQ(std::get<uint32_t>(key_length->value), 4u);
}

TEST(GgufLayout, RefusesWhatGgufCannotSayHere) {
  MetaStore gguf(ModelFormat::gguf, "llama", "m.gguf");
  auto already = gguf_layout_of(gguf);
  ASSERT_FALSE(already.ok());
  EXPECT_NE(already.status().message().find("GGUF file already"), std::string::npos) << already.status().message();

  auto llama3 = gguf_layout_of(llama_hf());  // llama3 RoPE scaling: a computed tensor in GGUF
  ASSERT_FALSE(llama3.ok());
  EXPECT_EQ(llama3.status().code(), StatusCode::unsupported);
  EXPECT_NE(llama3.status().message().find("llama3 RoPE scaling"), std::string::npos) << llama3.status().message();

  MetaStore extra = llama_hf_with_tensors();
  extra.add_tensor("model.layers.0.mlp.experts.0.weight", 8);
  auto unknown = gguf_layout_of(extra);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("'model.layers.0.mlp.experts.0.weight' has no GGUF name"),
            std::string::npos)
      << unknown.status().message();

  MetaStore odd = llama_hf_with_tensors();
  MetaStore wrong(ModelFormat::safetensors, "LlamaForCausalLM", "cfg");
  wrong.meta = odd.meta;
  for (const TensorRef& t : odd.tensors())
    wrong.add_tensor(t.name, t.name.find("q_proj") != std::string::npos ? 30 : t.shape[0]);
  auto rows = gguf_layout_of(wrong);
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.status().message().find("not 4 heads"), std::string::npos) << rows.status().message();
}

}  // namespace
}  // namespace tessera::transformer
