// Hyper-parameters and tensor names: what the plugin reads of a GGUF file's
// "<arch>.*" keys and of a Hugging Face config.json (as the core flattens it),
// and how it names a Hugging Face checkpoint's tensors.
#include <gtest/gtest.h>

#include <limits>

#include <string>
#include <vector>

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
  void add_tensor(const std::string& name) {
    TensorRef t;
    t.name = name;
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

}  // namespace
}  // namespace tessera::transformer
