// ModelFile: GGUF and Hugging Face folders as one weight store of raw
// tensors and metadata (what they mean is the architecture plugins'
// business: plugins/arch/*/tests); inspect; and the real default model when
// it is present.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "model/gguf_bytes_testing.hpp"
#include "model/gguf_writer.hpp"
#include "model/inspect.hpp"
#include "model/model_file.hpp"
#include "model/safetensors_bytes_testing.hpp"

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

TEST(ModelFileGguf, TensorsAsStoredWithRowMajorShapesAndRawMetadata) {
  const std::string dir = test::scratch_dir("tiny_gguf");
  ASSERT_TRUE(tiny_llama(false).write(dir + "/tiny.gguf").ok());
  auto r = open_model(dir + "/tiny.gguf");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ModelFile& m = *r.value();
  EXPECT_EQ(m.kind(), ModelFile::Kind::gguf);
  EXPECT_EQ(m.format(), ModelFormat::gguf);
  ASSERT_NE(m.gguf(), nullptr);
  EXPECT_EQ(m.architecture(), "llama");
  EXPECT_EQ(m.name(), "tiny");

  // The metadata, read in place: integers of any width, floats, strings, arrays.
  const Metadata& meta = m.metadata();
  EXPECT_EQ(meta.size(), m.gguf()->metadata().size());
  EXPECT_EQ(meta.key(0), "general.architecture");
  EXPECT_EQ(meta.get_string("general.architecture"), "llama");
  EXPECT_EQ(meta.type("llama.block_count"), MetaType::integer);
  EXPECT_EQ(meta.get_int("llama.block_count"), 1);
  EXPECT_EQ(meta.get_real("llama.block_count"), 1.0) << "integers read as reals too";
  EXPECT_NEAR(*meta.get_real("llama.attention.layer_norm_rms_epsilon"), 1e-6, 1e-12);
  EXPECT_EQ(meta.get_int("llama.attention.layer_norm_rms_epsilon"), std::nullopt) << "a real is no integer";
  EXPECT_EQ(meta.get_bool("tokenizer.ggml.add_bos_token"), true);
  EXPECT_EQ(meta.type("tokenizer.ggml.tokens"), MetaType::array);
  EXPECT_EQ(meta.array_length("tokenizer.ggml.tokens"), static_cast<size_t>(kVocab));
  EXPECT_EQ(meta.element_type("tokenizer.ggml.tokens"), MetaType::string);
  EXPECT_EQ(meta.get_string("tokenizer.ggml.tokens", 3), "t3");
  EXPECT_EQ(meta.get_string("tokenizer.ggml.tokens", kVocab), std::nullopt) << "past the end";
  EXPECT_EQ(meta.type("llama.absent"), MetaType::none);
  EXPECT_FALSE(meta.contains("llama.absent"));

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
  EXPECT_EQ(m.tensors()[0].name, "token_embd.weight") << "file order";
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

TEST(ModelFileGguf, WhatEveryFileMustSayOrHoldIsChecked) {
  GgufWriter w = tiny_llama();
  w.set_string("general.architecture", "");
  const std::string dir = test::scratch_dir("no_arch");
  ASSERT_TRUE(w.write(dir + "/m.gguf").ok());
  auto r = open_model(dir + "/m.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::corrupt_data);
  EXPECT_NE(r.status().message().find("'general.architecture' is missing"), std::string::npos)
      << r.status().message();
  // Absent, a folder without config.json, or unreadable: one class of error
  // (unavailable), as corrupt files are another (corrupt_data), whatever the cause.
  EXPECT_EQ(open_model(dir + "/absent.gguf").status().code(), StatusCode::unavailable);
  EXPECT_EQ(open_model(dir).status().code(), StatusCode::unavailable);
}

// A GGUF whose Linears are GPTQ checkpoint tensors (tessera quantize
// --format gptq) loads them as blocks under the weight's name; a config
// that is not JSON, not an object, names no GPTQ/AWQ, or whose tensors are
// missing is corrupt, naming the file and the key.
TEST(ModelFileGguf, GptqTensorsNamedByTheQuantizationConfigLoadAsBlocks) {
  const std::string dir = test::scratch_dir("gguf_gptq");
  auto with_config = [&](const std::string& name, const std::string& config, bool with_tensors) {
    GgufWriter w = tiny_llama();
    w.set_string("tessera.quantization_config", config);
    if (with_tensors) {
      // blk.0.attn_v: 3-bit groups of 32, 32 outputs: qweight [32·3/32, 32], qzeros [1, 32·3/32].
      std::vector<uint32_t> qweight(3 * 32, 0x92492492u), qzeros(3, 0u);
      std::vector<uint16_t> scales(32, 0x3C00);  // 1.0
      EXPECT_TRUE(w.add_tensor("blk.0.attn_v.qweight", DType::i32, {32, 3}, std::as_bytes(std::span(qweight))).ok());
      EXPECT_TRUE(w.add_tensor("blk.0.attn_v.qzeros", DType::i32, {3, 1}, std::as_bytes(std::span(qzeros))).ok());
      EXPECT_TRUE(w.add_tensor("blk.0.attn_v.scales", DType::f16, {32, 1}, std::as_bytes(std::span(scales))).ok());
    }
    const std::string path = dir + "/" + name + ".gguf";
    EXPECT_TRUE(w.write(path).ok());
    return open_model(path);
  };
  const std::string gptq3 = R"({"quant_method": "gptq", "bits": 3, "group_size": 32, "checkpoint_format": "gptq_v2"})";
  auto good = with_config("good", gptq3, true);
  ASSERT_TRUE(good.ok()) << good.status().message();
  const TensorRef* v = (*good)->find("blk.0.attn_v.weight");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->dtype, DType::q4_0) << "zeros of 0: every q − z + 8 a nibble";
  EXPECT_EQ(v->shape[0], 32);
  EXPECT_EQ(v->shape[1], 32);
  EXPECT_EQ((*good)->find("blk.0.attn_v.qweight"), nullptr) << "the packed tensors leave the store";
  EXPECT_NE((*good)->find("blk.0.attn_q.weight"), nullptr) << "plain weights stay";
  EXPECT_EQ((*good)->repacked_from(), "gptq 3-bit, group size 32");

  const struct {
    const char* name;
    std::string config;
    bool tensors;
    const char* says;
  } bad[] = {
      {"not_json", "{bits: 3", true, "is not JSON"},
      {"not_object", "[3]", true, "is not a JSON object"},
      {"no_method", R"({"quant_method": "bitsandbytes"})", true, "names no GPTQ or AWQ"},
      {"no_tensors", gptq3, false, "no tensor ends in '.qweight'"},
  };
  for (const auto& c : bad) {
    auto r = with_config(c.name, c.config, c.tensors);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.status().code(), StatusCode::corrupt_data) << c.name;
    EXPECT_NE(r.status().message().find(c.says), std::string::npos) << c.name << ": " << r.status().message();
    EXPECT_NE(r.status().message().find(std::string(c.name) + ".gguf"), std::string::npos) << r.status().message();
  }
}

json llama_config() {
  return json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "hidden_size": 32, "intermediate_size": 64,
    "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 1,
    "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "max_position_embeddings": 131072,
    "vocab_size": 8, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "eos_token_id": [2, 3], "head_dim": null,
    "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192,
                     "low_freq_factor": 1.0, "high_freq_factor": 4.0},
    "quantization_config": {"bits": 4, "layers": [{"name": "a"}, {"name": "b"}]}})");
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
    EXPECT_EQ(m.format(), ModelFormat::safetensors);
    EXPECT_EQ(m.architecture(), "LlamaForCausalLM");
    const TensorRef* e = m.find("model.embed_tokens.weight");
    ASSERT_NE(e, nullptr) << "names as stored";
    EXPECT_EQ(e->format, "bf16");
    EXPECT_EQ(e->shape[0], kVocab);
    EXPECT_EQ(e->shape[1], kEmbd);
    EXPECT_NE(m.find("model.layers.0.self_attn.q_proj.weight"), nullptr);
    EXPECT_NE(m.find("model.layers.0.self_attn.q_proj.bias"), nullptr);
    EXPECT_NE(m.find("model.norm.weight"), nullptr);
    EXPECT_EQ(m.find("lm_head.weight") != nullptr, !sharded);
    EXPECT_EQ(m.find("token_embd.weight"), nullptr);

    // config.json flattened: nested objects to dotted keys, arrays kept.
    const Metadata& meta = m.metadata();
    EXPECT_EQ(meta.get_int("hidden_size"), kEmbd);
    EXPECT_EQ(meta.get_real("rope_theta"), 500000.0);
    EXPECT_EQ(meta.get_bool("tie_word_embeddings"), false);
    EXPECT_EQ(meta.get_string("rope_scaling.rope_type"), "llama3");
    EXPECT_EQ(meta.get_real("rope_scaling.factor"), 8.0);
    EXPECT_EQ(meta.type("rope_scaling"), MetaType::none) << "an object is only its fields";
    EXPECT_EQ(meta.type("head_dim"), MetaType::null);
    EXPECT_EQ(meta.array_length("architectures"), 1u);
    EXPECT_EQ(meta.get_string("architectures", 0), "LlamaForCausalLM");
    EXPECT_EQ(meta.element_type("eos_token_id"), MetaType::integer);
    EXPECT_EQ(meta.get_int("eos_token_id", 1), 3);
    EXPECT_EQ(meta.get_string("quantization_config.layers.1.name"), "b") << "arrays of objects by index";
    EXPECT_EQ(meta.get_int("quantization_config.bits"), 4);

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
  // A config that does not say what model it is.
  const std::string d2 = write_hf_folder("hf_no_arch", false, true);
  json cfg = llama_config();
  cfg.erase("architectures");
  test::write_text(d2 + "/config.json", cfg.dump());
  auto r = open_model(d2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::corrupt_data);
  EXPECT_NE(r.status().message().find("neither 'architectures' nor 'model_type'"), std::string::npos)
      << r.status().message();
  cfg["model_type"] = "llama";  // older configs: the model_type names the family
  test::write_text(d2 + "/config.json", cfg.dump());
  auto typed = open_model(d2);
  ASSERT_TRUE(typed.ok()) << typed.status().message();
  EXPECT_EQ((*typed)->architecture(), "llama");
  test::write_text(d2 + "/config.json", "[1, 2]");
  EXPECT_EQ(open_model(d2).status().code(), StatusCode::corrupt_data);
}

TEST(Inspect, GgufSummaryAndText) {
  const std::string dir = test::scratch_dir("inspect");
  ASSERT_TRUE(tiny_llama().write(dir + "/tiny.gguf").ok());
  auto r = open_model(dir + "/tiny.gguf");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const json info = inspect_model(*r.value());
  EXPECT_EQ(info["architecture"], "llama");
  EXPECT_EQ(info["format"], "gguf");
  EXPECT_FALSE(info.contains("hparams")) << "the architecture plugin's to add";
  EXPECT_EQ(info["tensors"]["count"], 8);
  EXPECT_EQ(info["tensors"]["by_type"]["q8_0"]["count"], 3);
  EXPECT_EQ(info["tensors"]["by_type"]["q8_0"]["bytes"], (32 + 16 + 8) * 34);
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

TEST(DefaultModel, SmolLM2MetadataAndEveryTensorResolves) {
  const std::string path = std::string(TESSERA_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent (run scripts/fetch-model.sh)";
  auto r = open_model(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ModelFile& m = *r.value();
  EXPECT_EQ(m.architecture(), "llama");
  const Metadata& meta = m.metadata();
  EXPECT_EQ(meta.get_int("llama.block_count"), 30);
  EXPECT_EQ(meta.get_int("llama.embedding_length"), 576);
  EXPECT_EQ(meta.get_int("llama.attention.head_count"), 9);
  EXPECT_EQ(meta.get_int("llama.attention.head_count_kv"), 3);
  EXPECT_EQ(meta.get_int("llama.feed_forward_length"), 1536);
  EXPECT_EQ(meta.array_length("tokenizer.ggml.tokens"), 49152u);
  EXPECT_EQ(meta.get_int("llama.context_length"), 8192);
  EXPECT_EQ(meta.get_real("llama.rope.freq_base"), 100000.0);
  EXPECT_EQ(m.find("output.weight"), nullptr) << "tied embeddings";
  EXPECT_EQ(m.tensors().size(), 272u);
  for (const char* g : {"token_embd.weight", "output_norm.weight"}) EXPECT_NE(m.find(g), nullptr) << g;
  const char* per_layer[] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                             "ffn_norm",  "ffn_gate", "ffn_up", "ffn_down"};
  for (int l = 0; l < 30; ++l) {
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
