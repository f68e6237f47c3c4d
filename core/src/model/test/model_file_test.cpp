// ModelFile: GGUF and Hugging Face folders as one weight store; config.json and
// GGUF metadata mapping; inspect; and the real default model when it is present.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "gguf_bytes.hpp"
#include "model/gguf_hparams.hpp"
#include "model/gguf_writer.hpp"
#include "model/hf_config.hpp"
#include "model/inspect.hpp"
#include "model/model_file.hpp"
#include "safetensors_bytes.hpp"

namespace tessera {
namespace {

using nlohmann::json;

constexpr int kVocab = 8;
constexpr int kEmbd = 32;

std::vector<std::byte> zeros(size_t n) { return std::vector<std::byte>(n); }

// A 1-layer llama-like GGUF: f32 norms, q8_0 attention, q4_1 FFN, f16 embeddings.
GgufWriter tiny_llama(bool with_output = true, int vocab_tokens = kVocab) {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string("general.name", "tiny");
  w.set_u32("llama.block_count", 1);
  w.set_u32("llama.context_length", 256);
  w.set_u32("llama.embedding_length", kEmbd);
  w.set_u32("llama.feed_forward_length", 64);
  w.set_u32("llama.attention.head_count", 4);
  w.set_u32("llama.attention.head_count_kv", 2);
  w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-6f);
  w.set_f32("llama.rope.freq_base", 500000.0f);
  w.set_string("tokenizer.ggml.model", "gpt2");
  std::vector<std::string> tokens;
  for (int i = 0; i < vocab_tokens; ++i) {
    std::string token = "t";  // not "t" + to_string(i): a GCC 12 -Wrestrict false positive
    token += std::to_string(i);
    tokens.push_back(token);
  }
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  w.set_string("tokenizer.chat_template", "{{ '<|im_start|>' + message.content }}");
  auto add = [&](const std::string& name, DType dt, std::vector<uint64_t> dims) {
    uint64_t n = 1;
    for (auto d : dims) n *= d;
    EXPECT_TRUE(w.add_tensor(name, dt, dims, zeros(dtype_row_bytes(dt, dims[0]) * (n / dims[0]))).ok()) << name;
  };
  add("token_embd.weight", DType::f16, {kEmbd, kVocab});
  add("blk.0.attn_norm.weight", DType::f32, {kEmbd});
  add("blk.0.attn_q.weight", DType::q8_0, {kEmbd, kEmbd});
  add("blk.0.attn_k.weight", DType::q8_0, {kEmbd, 16});
  add("blk.0.ffn_up.weight", DType::q4_1, {kEmbd, 64});
  add("blk.0.ffn_down.weight", DType::q4_k, {256, kEmbd});
  add("output_norm.weight", DType::f32, {kEmbd});
  if (with_output) add("output.weight", DType::q8_0, {kEmbd, kVocab});
  return w;
}

TEST(ModelFileGguf, NormalizesShapesFormatsAndHparams) {
  const std::string dir = test::scratch_dir("tiny_gguf");
  ASSERT_TRUE(tiny_llama(false).write(dir + "/tiny.gguf").ok());
  auto r = open_model(dir + "/tiny.gguf");
  // output.weight is absent, so the embedding must match [vocab, n_embd] only.
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ModelFile& m = *r.value();
  EXPECT_EQ(m.kind(), ModelFile::Kind::gguf);
  ASSERT_NE(m.gguf(), nullptr);
  const ModelHParams& hp = m.hparams();
  EXPECT_EQ(hp.arch, "llama");
  EXPECT_EQ(hp.name, "tiny");
  EXPECT_EQ(hp.block_count, 1);
  EXPECT_EQ(hp.context_length, 256);
  EXPECT_EQ(hp.embedding_length, kEmbd);
  EXPECT_EQ(hp.feed_forward_length, 64);
  EXPECT_EQ(hp.head_count, 4);
  EXPECT_EQ(hp.head_count_kv, 2);
  EXPECT_EQ(hp.head_dim, 8) << "defaults to n_embd / n_head";
  EXPECT_NEAR(hp.rms_norm_eps, 1e-6, 1e-12);
  EXPECT_EQ(hp.rope_freq_base, 500000.0);
  EXPECT_EQ(hp.rope_style, RopeStyle::adjacent);
  EXPECT_EQ(hp.vocab_size, kVocab);
  EXPECT_TRUE(hp.tied_embeddings);

  const TensorRef* q = m.find("blk.0.attn_k.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->ndim, 2);
  EXPECT_EQ(q->shape[0], 16) << "row-major: out_features first";
  EXPECT_EQ(q->shape[1], kEmbd);
  EXPECT_EQ(q->format, "ggml.q8_0");
  EXPECT_EQ(q->nbytes, 16u * 34);
  EXPECT_EQ(m.find("token_embd.weight")->format, "f16");
  EXPECT_EQ(m.find("blk.0.ffn_up.weight")->format, "ggml.q4_1");
  EXPECT_EQ(m.find("blk.0.ffn_down.weight")->format, "ggml.q4_k");
  EXPECT_EQ(m.find("blk.0.attn_norm.weight")->shape[0], kEmbd);
  EXPECT_EQ(m.tensors().size(), 7u);
  EXPECT_EQ(m.source(), dir + "/tiny.gguf");
}

// This process's resident set, from /proc/self/statm (pages).
int64_t resident_pages() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident;
}

TEST(ModelFileGguf, ReleasingResidentPagesKeepsTheDataReadable) {
  // A 4 MiB f32 tensor of distinct values, mapped from a file: release_resident
  // takes its pages out of the resident set, and the same bytes read back
  // (faulted in again).
  GgufWriter w = tiny_llama();
  constexpr uint64_t kRows = 1024, kCols = 1024;
  std::vector<std::byte> bytes(kRows * kCols * sizeof(float));
  for (uint64_t i = 0; i < kRows * kCols; ++i) {
    const float v = static_cast<float>(i) * 0.25f;
    std::memcpy(bytes.data() + i * sizeof(float), &v, sizeof v);
  }
  ASSERT_TRUE(w.add_tensor("big.weight", DType::f32, {kCols, kRows}, bytes).ok());
  const std::string dir = test::scratch_dir("release_gguf");
  ASSERT_TRUE(w.write(dir + "/m.gguf").ok());
  auto r = open_model(dir + "/m.gguf");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const TensorRef* t = (*r)->find("big.weight");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->nbytes, bytes.size());
  const auto* data = static_cast<const std::byte*>(t->data);
  ASSERT_EQ(std::memcmp(data, bytes.data(), bytes.size()), 0);  // resident now
  const int64_t before = resident_pages();
  (*r)->release_resident(*t);
  const int64_t page = sysconf(_SC_PAGESIZE);
  EXPECT_GE(before - resident_pages(), static_cast<int64_t>(3 * bytes.size() / 4) / page)
      << "the tensor's pages should have left the resident set";
  EXPECT_EQ(std::memcmp(data, bytes.data(), bytes.size()), 0);
  (*r)->release_resident(*t);  // twice, and a neighbour's partial pages: no harm
  (*r)->release_resident(*(*r)->find("output.weight"));
  EXPECT_EQ(std::memcmp(data, bytes.data(), bytes.size()), 0);

  // A file opened from memory has no mapping: a no-op.
  auto mem = GgufFile::open_memory(w.to_bytes(), "m.gguf");
  ASSERT_TRUE(mem.ok());
  (*mem)->release_resident(bytes.data(), bytes.size());
}

TEST(ModelFileGguf, VocabularyMismatchNamesBothNumbers) {
  const std::string dir = test::scratch_dir("vocab_mismatch");
  ASSERT_TRUE(tiny_llama(true, 10).write(dir + "/m.gguf").ok());
  auto r = open_model(dir + "/m.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("the vocabulary has 10 tokens but tensor 'token_embd.weight' has 8 rows"),
            std::string::npos)
      << r.status().message();
}

TEST(ModelFileGguf, MissingRequiredMetadataIsNamed) {
  GgufWriter w = tiny_llama();
  w.set_string("general.architecture", "qwen2");  // its qwen2.* keys are all absent
  const std::string dir = test::scratch_dir("missing_meta");
  ASSERT_TRUE(w.write(dir + "/m.gguf").ok());
  auto r = open_model(dir + "/m.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'qwen2.block_count' is missing"), std::string::npos) << r.status().message();
  EXPECT_EQ(open_model(dir + "/absent.gguf").status().code(), StatusCode::not_found);
}

TEST(GgufHparams, QwenIsNeoxAndScalingAndMamba) {
  GgufWriter w;
  w.set_string("general.architecture", "qwen2");
  w.set_u32("qwen2.block_count", 2);
  w.set_u32("qwen2.embedding_length", 64);
  w.set_u32("qwen2.attention.head_count", 8);
  w.set_u32("qwen2.attention.key_length", 16);
  w.set_u32("qwen2.vocab_size", 100);
  w.set_string("qwen2.rope.scaling.type", "linear");
  w.set_f32("qwen2.rope.scaling.factor", 4.0f);
  w.set_u32("qwen2.rope.scaling.original_context_length", 4096);
  auto f = GgufFile::open_memory(w.to_bytes(), "q.gguf");
  ASSERT_TRUE(f.ok());
  auto hp = hparams_from_gguf(*f.value());
  ASSERT_TRUE(hp.ok()) << hp.status().message();
  EXPECT_EQ(hp->rope_style, RopeStyle::neox);
  EXPECT_EQ(hp->head_count_kv, 8) << "defaults to head_count";
  EXPECT_EQ(hp->head_dim, 16);
  EXPECT_EQ(hp->vocab_size, 100);
  EXPECT_EQ(hp->rope_scaling, RopeScaling::linear);
  EXPECT_EQ(hp->rope_scaling_factor, 4.0);
  EXPECT_EQ(hp->rope_original_context, 4096);

  GgufWriter m;
  m.set_string("general.architecture", "mamba");
  m.set_u32("mamba.block_count", 24);
  m.set_u32("mamba.embedding_length", 768);
  m.set_u32("mamba.ssm.conv_kernel", 4);
  m.set_u32("mamba.ssm.inner_size", 1536);
  m.set_u32("mamba.ssm.state_size", 16);
  m.set_u32("mamba.ssm.time_step_rank", 48);
  auto mf = GgufFile::open_memory(m.to_bytes(), "m.gguf");
  ASSERT_TRUE(mf.ok());
  auto mh = hparams_from_gguf(*mf.value());
  ASSERT_TRUE(mh.ok()) << mh.status().message();
  EXPECT_EQ(mh->head_count, 0);
  EXPECT_EQ(mh->ssm_conv_kernel, 4);
  EXPECT_EQ(mh->ssm_inner_size, 1536);
  EXPECT_EQ(mh->ssm_state_size, 16);
  EXPECT_EQ(mh->ssm_time_step_rank, 48);
  m.set_u32("mamba.embedding_length", 0);
  m.set_string("mamba.rope.scaling.type", "weird");
  m.set("mamba.ssm.state_size", std::string("sixteen"));
  auto bad = GgufFile::open_memory(m.to_bytes(), "m.gguf");
  ASSERT_TRUE(bad.ok());
  auto bh = hparams_from_gguf(*bad.value());
  ASSERT_FALSE(bh.ok());
  EXPECT_NE(bh.status().message().find("rope scaling type 'weird'"), std::string::npos) << bh.status().message();
}

json llama_config() {
  return json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "hidden_size": 32, "intermediate_size": 64,
    "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 1,
    "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "max_position_embeddings": 131072,
    "vocab_size": 8, "tie_word_embeddings": false,
    "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192,
                     "low_freq_factor": 1.0, "high_freq_factor": 4.0}})");
}

TEST(HfConfig, MapsLlamaQwenMistral) {
  auto hp = hparams_from_hf_config(llama_config(), "config.json");
  ASSERT_TRUE(hp.ok()) << hp.status().message();
  EXPECT_EQ(hp->arch, "llama");
  EXPECT_EQ(hp->block_count, 1);
  EXPECT_EQ(hp->embedding_length, 32);
  EXPECT_EQ(hp->feed_forward_length, 64);
  EXPECT_EQ(hp->head_count, 4);
  EXPECT_EQ(hp->head_count_kv, 2);
  EXPECT_EQ(hp->head_dim, 8);
  EXPECT_EQ(hp->context_length, 131072);
  EXPECT_EQ(hp->vocab_size, 8);
  EXPECT_EQ(hp->rope_freq_base, 500000.0);
  EXPECT_EQ(hp->rope_style, RopeStyle::neox);
  EXPECT_EQ(hp->rope_scaling, RopeScaling::llama3);
  EXPECT_EQ(hp->rope_scaling_factor, 8.0);
  EXPECT_EQ(hp->rope_original_context, 8192);
  EXPECT_EQ(hp->rope_low_freq_factor, 1.0);
  EXPECT_EQ(hp->rope_high_freq_factor, 4.0);
  EXPECT_FALSE(hp->tied_embeddings);

  json q = llama_config();
  q["architectures"] = {"Qwen2ForCausalLM"};
  q["tie_word_embeddings"] = true;
  q["head_dim"] = 16;
  q["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  q.erase("num_key_value_heads");
  auto qh = hparams_from_hf_config(q, "config.json");
  ASSERT_TRUE(qh.ok()) << qh.status().message();
  EXPECT_EQ(qh->arch, "qwen2");
  EXPECT_TRUE(qh->tied_embeddings);
  EXPECT_EQ(qh->head_dim, 16);
  EXPECT_EQ(qh->head_count_kv, 4);
  EXPECT_EQ(qh->rope_scaling, RopeScaling::linear);
  EXPECT_EQ(qh->rope_scaling_factor, 2.0);

  json m = llama_config();
  m["architectures"] = {"MistralForCausalLM"};
  m["rope_scaling"] = nullptr;
  auto mh = hparams_from_hf_config(m, "config.json");
  ASSERT_TRUE(mh.ok());
  EXPECT_EQ(mh->arch, "mistral");
  EXPECT_EQ(mh->rope_scaling, RopeScaling::none);
}

TEST(HfConfig, ASlidingWindowCapsTheContext) {
  // Mistral 7B v0.1: a 4096-position window, 32768 trained positions.
  json m = llama_config();
  m["architectures"] = {"MistralForCausalLM"};
  m["rope_scaling"] = nullptr;
  m["max_position_embeddings"] = 32768;
  m["sliding_window"] = 4096;
  auto capped = hparams_from_hf_config(m, "config.json");
  ASSERT_TRUE(capped.ok()) << capped.status().message();
  EXPECT_EQ(capped->context_length, 4096);
  m["sliding_window"] = nullptr;  // Mistral v0.2 and later
  EXPECT_EQ(hparams_from_hf_config(m, "config.json")->context_length, 32768);
  m["sliding_window"] = 65536;  // wider than the context: no effect
  EXPECT_EQ(hparams_from_hf_config(m, "config.json")->context_length, 32768);
  m["sliding_window"] = "wide";
  EXPECT_FALSE(hparams_from_hf_config(m, "config.json").ok());

  // Qwen2 configs carry a window that applies only with use_sliding_window.
  json q = llama_config();
  q["architectures"] = {"Qwen2ForCausalLM"};
  q["rope_scaling"] = nullptr;
  q["max_position_embeddings"] = 32768;
  q["sliding_window"] = 4096;
  q["use_sliding_window"] = false;
  EXPECT_EQ(hparams_from_hf_config(q, "config.json")->context_length, 32768);
  q["use_sliding_window"] = true;
  EXPECT_EQ(hparams_from_hf_config(q, "config.json")->context_length, 4096);
}

TEST(GgufHparams, ASlidingWindowCapsTheContext) {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.block_count", 2);
  w.set_u32("llama.embedding_length", 64);
  w.set_u32("llama.attention.head_count", 8);
  w.set_u32("llama.context_length", 32768);
  w.set_u32("llama.vocab_size", 100);
  auto plain = GgufFile::open_memory(w.to_bytes(), "m.gguf");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(hparams_from_gguf(*plain.value())->context_length, 32768);
  w.set_u32("llama.attention.sliding_window", 4096);
  auto windowed = GgufFile::open_memory(w.to_bytes(), "m.gguf");
  ASSERT_TRUE(windowed.ok());
  EXPECT_EQ(hparams_from_gguf(*windowed.value())->context_length, 4096);
}

TEST(HfConfig, DefaultsFollowHuggingFace) {
  json j = llama_config();
  j.erase("rms_norm_eps");
  j.erase("architectures");
  j["model_type"] = "qwen2";
  auto hp = hparams_from_hf_config(j, "config.json");
  ASSERT_TRUE(hp.ok()) << hp.status().message();
  EXPECT_EQ(hp->arch, "qwen2");                  // from model_type when "architectures" is absent
  EXPECT_NEAR(hp->rms_norm_eps, 1e-6, 1e-15);   // Hugging Face's default, not GGUF's
  j["model_type"] = "gpt2";
  EXPECT_FALSE(hparams_from_hf_config(j, "config.json").ok());
}

TEST(HfConfig, ClearErrors) {
  auto expect = [](json j, const std::string& fragment) {
    auto r = hparams_from_hf_config(j, "cfg/config.json");
    ASSERT_FALSE(r.ok()) << fragment;
    EXPECT_NE(r.status().message().find("cfg/config.json"), std::string::npos);
    EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().message();
  };
  json a = llama_config();
  a["architectures"] = {"GPT2LMHeadModel"};
  expect(a, "architecture 'GPT2LMHeadModel' is not supported");
  json b = llama_config();
  b.erase("hidden_size");
  expect(b, "required key 'hidden_size' is missing");
  json c = llama_config();
  c["num_hidden_layers"] = -3;
  expect(c, "'num_hidden_layers' must be a positive integer");
  json d = llama_config();
  d["num_key_value_heads"] = 3;
  expect(d, "not a multiple of num_key_value_heads 3");
  json e = llama_config();
  e["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 2.0}};
  expect(e, "rope_scaling type 'dynamic' is not supported");
  json f = llama_config();
  f["rms_norm_eps"] = "small";
  expect(f, "'rms_norm_eps' must be a number");
}

TEST(HfNames, MapsToGgufNames) {
  EXPECT_EQ(normalize_hf_tensor_name("model.embed_tokens.weight"), "token_embd.weight");
  EXPECT_EQ(normalize_hf_tensor_name("model.norm.weight"), "output_norm.weight");
  EXPECT_EQ(normalize_hf_tensor_name("lm_head.weight"), "output.weight");
  EXPECT_EQ(normalize_hf_tensor_name("model.layers.0.self_attn.q_proj.weight"), "blk.0.attn_q.weight");
  EXPECT_EQ(normalize_hf_tensor_name("model.layers.12.self_attn.q_proj.bias"), "blk.12.attn_q.bias");
  EXPECT_EQ(normalize_hf_tensor_name("model.layers.3.self_attn.k_proj.weight"), "blk.3.attn_k.weight");
  EXPECT_EQ(normalize_hf_tensor_name("model.layers.3.self_attn.v_proj.bias"), "blk.3.attn_v.bias");
  EXPECT_EQ(normalize_hf_tensor_name("model.layers.3.self_attn.o_proj.weight"), "blk.3.attn_output.weight");
  EXPECT_EQ(normalize_hf_tensor_name("model.layers.7.mlp.gate_proj.weight"), "blk.7.ffn_gate.weight");
  EXPECT_EQ(normalize_hf_tensor_name("model.layers.7.mlp.up_proj.weight"), "blk.7.ffn_up.weight");
  EXPECT_EQ(normalize_hf_tensor_name("model.layers.7.mlp.down_proj.weight"), "blk.7.ffn_down.weight");
  EXPECT_EQ(normalize_hf_tensor_name("model.layers.7.input_layernorm.weight"), "blk.7.attn_norm.weight");
  EXPECT_EQ(normalize_hf_tensor_name("model.layers.7.post_attention_layernorm.weight"), "blk.7.ffn_norm.weight");
  EXPECT_EQ(normalize_hf_tensor_name("model.layers.x.mlp.up_proj.weight"), std::nullopt);
  EXPECT_EQ(normalize_hf_tensor_name("model.layers.1.self_attn.rotary_emb.inv_freq"), std::nullopt);
  EXPECT_EQ(normalize_hf_tensor_name("model.layers..mlp.up_proj.weight"), std::nullopt);
  EXPECT_EQ(normalize_hf_tensor_name(".weight"), std::nullopt);
}

// A one-layer HF folder in F32/BF16 with tokenizer files.
std::string write_hf_folder(const std::string& name, bool sharded, bool with_lm_head) {
  const std::string dir = test::scratch_dir(name);
  test::write_text(dir + "/config.json", llama_config().dump());
  test::write_text(dir + "/tokenizer.json", R"({"model": {"type": "BPE", "vocab": {}}})");
  test::write_text(dir + "/tokenizer_config.json",
                   R"({"add_bos_token": true, "chat_template": "<|start_header_id|>{{ m }}"})");
  test::SafetensorsBuilder a, b;
  a.add("model.embed_tokens.weight", "BF16", {kVocab, kEmbd}, kVocab * kEmbd * 2);
  a.add("model.layers.0.self_attn.q_proj.weight", "F32", {kEmbd, kEmbd}, kEmbd * kEmbd * 4);
  a.add("model.layers.0.self_attn.q_proj.bias", "F32", {kEmbd}, kEmbd * 4);
  test::SafetensorsBuilder& second = sharded ? b : a;
  second.add("model.norm.weight", "F32", {kEmbd}, kEmbd * 4);
  if (with_lm_head) second.add("lm_head.weight", "F16", {kVocab, kEmbd}, kVocab * kEmbd * 2);
  if (sharded) {
    test::write_file(dir + "/model-00001-of-00002.safetensors", a.bytes());
    test::write_file(dir + "/model-00002-of-00002.safetensors", b.bytes());
    json map = {{"model.embed_tokens.weight", "model-00001-of-00002.safetensors"},
                {"model.layers.0.self_attn.q_proj.weight", "model-00001-of-00002.safetensors"},
                {"model.layers.0.self_attn.q_proj.bias", "model-00001-of-00002.safetensors"},
                {"model.norm.weight", "model-00002-of-00002.safetensors"}};
    if (with_lm_head) map["lm_head.weight"] = "model-00002-of-00002.safetensors";
    test::write_text(dir + "/model.safetensors.index.json", json{{"weight_map", map}}.dump());
  } else {
    test::write_file(dir + "/model.safetensors", a.bytes());
  }
  return dir;
}

TEST(ModelFileSafetensors, SingleAndShardedFolders) {
  for (bool sharded : {false, true}) {
    const std::string dir = write_hf_folder(sharded ? "hf_sharded" : "hf_single", sharded, !sharded);
    auto r = open_model(dir);
    ASSERT_TRUE(r.ok()) << r.status().message();
    const ModelFile& m = *r.value();
    EXPECT_EQ(m.kind(), ModelFile::Kind::safetensors);
    EXPECT_EQ(m.gguf(), nullptr);
    EXPECT_EQ(m.tokenizer_json_path(), dir + "/tokenizer.json");
    EXPECT_EQ(m.tokenizer_config_path(), dir + "/tokenizer_config.json");
    EXPECT_EQ(m.hparams().rope_style, RopeStyle::neox);
    EXPECT_EQ(m.hparams().tied_embeddings, sharded) << "no lm_head.weight -> tied";
    const TensorRef* e = m.find("token_embd.weight");
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->format, "bf16");
    EXPECT_EQ(e->shape[0], kVocab);
    EXPECT_EQ(e->shape[1], kEmbd);
    EXPECT_NE(m.find("blk.0.attn_q.weight"), nullptr);
    EXPECT_NE(m.find("blk.0.attn_q.bias"), nullptr);
    EXPECT_NE(m.find("output_norm.weight"), nullptr);
    EXPECT_EQ(m.find("output.weight") != nullptr, !sharded);

    const json info = inspect_model(m);
    EXPECT_EQ(info["format"], "safetensors");
    EXPECT_EQ(info["tokenizer"]["kind"], "bpe");
    EXPECT_EQ(info["tokenizer"]["chat_template"]["name"], "llama3");
    EXPECT_EQ(info["tokenizer"]["add_bos"], true);
  }
}

TEST(ModelFileSafetensors, FolderErrors) {
  const std::string dir = test::scratch_dir("hf_bad");
  auto none = open_model(dir);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("needs config.json"), std::string::npos);
  // Embedding rows disagree with config.vocab_size.
  const std::string d2 = write_hf_folder("hf_vocab", false, true);
  json cfg = llama_config();
  cfg["vocab_size"] = 9;
  test::write_text(d2 + "/config.json", cfg.dump());
  auto r = open_model(d2);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("the vocabulary has 9 tokens but tensor 'token_embd.weight' has 8 rows"),
            std::string::npos)
      << r.status().message();
}

TEST(Inspect, GgufSummaryAndText) {
  const std::string dir = test::scratch_dir("inspect");
  ASSERT_TRUE(tiny_llama().write(dir + "/tiny.gguf").ok());
  auto r = open_model(dir + "/tiny.gguf");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const json info = inspect_model(*r.value());
  EXPECT_EQ(info["architecture"], "llama");
  EXPECT_EQ(info["format"], "gguf");
  EXPECT_EQ(info["hparams"]["block_count"], 1);
  EXPECT_EQ(info["tensors"]["count"], 8);
  EXPECT_EQ(info["tensors"]["by_type"]["q8_0"]["count"], 3);
  EXPECT_EQ(info["tensors"]["by_type"]["q8_0"]["bytes"], (32 + 16 + 8) * 34);
  EXPECT_EQ(info["hparams"]["tied_embeddings"], false);
  EXPECT_EQ(info["tokenizer"]["kind"], "gpt2");
  EXPECT_EQ(info["tokenizer"]["vocab_size"], kVocab);
  EXPECT_EQ(info["tokenizer"]["special_tokens"]["bos"], 1);
  EXPECT_EQ(info["tokenizer"]["special_tokens"]["eos"], 2);
  EXPECT_FALSE(info["tokenizer"]["special_tokens"].contains("eot"));
  EXPECT_EQ(info["tokenizer"]["add_bos"], true);
  EXPECT_EQ(info["tokenizer"]["chat_template"]["name"], "chatml");
  const std::string text = format_inspect(info);
  EXPECT_NE(text.find("architecture:         llama"), std::string::npos) << text;
  EXPECT_NE(text.find("yes (chatml)"), std::string::npos) << text;
  EXPECT_NE(text.find("bos=1, eos=2"), std::string::npos) << text;
}

TEST(Inspect, ChatTemplateNames) {
  EXPECT_EQ(chat_template_name(""), "");
  EXPECT_EQ(chat_template_name("<|im_start|>user"), "chatml");
  EXPECT_EQ(chat_template_name("<|start_header_id|>"), "llama3");
  EXPECT_EQ(chat_template_name("[INST] {{ x }} [/INST]"), "llama2");
  EXPECT_EQ(chat_template_name("{{ x }}"), "custom");
}

TEST(DefaultModel, SmolLM2HparamsAndEveryTensorResolves) {
  const std::string path = std::string(TESSERA_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent (run scripts/fetch-model.sh)";
  auto r = open_model(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ModelFile& m = *r.value();
  const ModelHParams& hp = m.hparams();
  EXPECT_EQ(hp.arch, "llama");
  EXPECT_EQ(hp.block_count, 30);
  EXPECT_EQ(hp.embedding_length, 576);
  EXPECT_EQ(hp.head_count, 9);
  EXPECT_EQ(hp.head_count_kv, 3);
  EXPECT_EQ(hp.head_dim, 64);
  EXPECT_EQ(hp.feed_forward_length, 1536);
  EXPECT_EQ(hp.vocab_size, 49152);
  EXPECT_EQ(hp.context_length, 8192);
  EXPECT_EQ(hp.rope_freq_base, 100000.0);
  EXPECT_EQ(hp.rope_style, RopeStyle::adjacent);
  EXPECT_TRUE(hp.tied_embeddings);
  EXPECT_EQ(m.tensors().size(), 272u);
  for (const char* g : {"token_embd.weight", "output_norm.weight"}) EXPECT_NE(m.find(g), nullptr) << g;
  const char* per_layer[] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                             "ffn_norm",  "ffn_gate", "ffn_up", "ffn_down"};
  for (int l = 0; l < hp.block_count; ++l) {
    for (const char* p : per_layer) {
      const std::string name = "blk." + std::to_string(l) + "." + p + ".weight";
      const TensorRef* t = m.find(name);
      ASSERT_NE(t, nullptr) << name;
      EXPECT_NE(t->data, nullptr);
      EXPECT_EQ(t->cols(), std::string(p) == "ffn_down" ? 1536 : 576) << name;
    }
  }
  EXPECT_EQ(m.find("blk.0.attn_k.weight")->shape[0], 192);
  EXPECT_EQ(m.find("blk.0.attn_q.weight")->format, "ggml.q4_1");
  const json info = inspect_model(m);
  EXPECT_EQ(info["tokenizer"]["kind"], "gpt2");
  EXPECT_EQ(info["tokenizer"]["chat_template"]["name"], "chatml");
}

}  // namespace
}  // namespace tessera
