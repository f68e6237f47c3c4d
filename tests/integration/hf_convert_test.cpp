// `tessera convert` and `tessera quantize` of a Hugging Face folder, on the
// real default model: the GGUF is exported as an F32 Hugging Face folder
// (hf_export.hpp), converted back to GGUF by the core and the transformer
// plugin's layout, and compared with the control that hf_export writes by its
// own code (the original's metadata, the folder's values, Q/K rows permuted
// back): the same tensors byte for byte, the same hyper-parameters as the
// architecture plugin reads them, the original's tokenizer keys.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "engine/architecture_choice.hpp"
#include "engine/convert_model.hpp"
#include "engine/quantize_model.hpp"
#include "hf_export.hpp"
#include "io/read_file.hpp"
#include "model_fixture.hpp"
#include "tessera/half.hpp"
#include "support/scratch_dir.hpp"

namespace tessera::test {
namespace {

namespace fs = std::filesystem;

fs::path convert_scratch(const std::string& name) { return scratch_dir("tessera_integration_test") / name; }

// The default model exported once per process as an F32 folder, the control
// GGUF written from it by hf_export, and the folder converted by the core.
class HfConvert : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kModel)) TESSERA_MODEL_ABSENT(kModel.string() + " is absent: run scripts/fetch-model.sh");
    if (converted_) return;
    auto model = open_model(kModel.string());
    ASSERT_TRUE(model.ok()) << model.status().message();
    std::vector<std::shared_ptr<Quantizer>> quantizers;
    ASSERT_NO_FATAL_FAILURE(make_quantizers(test_registry(), quantizers));
    const Status exported = export_hf_folder(**model, quantizers, folder());
    ASSERT_TRUE(exported.ok()) << exported.message();
    auto opened = open_model(folder().string());
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    const Status control = export_f32_gguf(**model, **opened, control_path());
    ASSERT_TRUE(control.ok()) << control.message();
    auto report = convert_model({folder().string(), converted_path().string(), /*force=*/true}, test_registry());
    ASSERT_TRUE(report.ok()) << report.status().message();
    report_ = *report;
    original_ = *model;
    auto converted = open_model(converted_path().string());
    ASSERT_TRUE(converted.ok()) << converted.status().message();
    converted_ = *converted;
    auto control_file = open_model(control_path().string());
    ASSERT_TRUE(control_file.ok()) << control_file.status().message();
    control_ = *control_file;
  }

  static fs::path folder() { return convert_scratch("folder"); }
  static fs::path control_path() { return convert_scratch("control.gguf"); }
  static fs::path converted_path() { return convert_scratch("converted.gguf"); }

  static inline ConvertReport report_;
  static inline std::shared_ptr<ModelFile> original_, converted_, control_;
};

TEST_F(HfConvert, TensorsAreTheControlsByteForByte) {
  EXPECT_EQ(report_.architecture, "llama");
  EXPECT_EQ(report_.types, (std::map<std::string, int>{{"f32", static_cast<int>(control_->tensors().size())}}));
  ASSERT_EQ(converted_->tensors().size(), control_->tensors().size());
  for (const TensorRef& want : control_->tensors()) {
    const TensorRef* got = converted_->find(want.name);
    ASSERT_NE(got, nullptr) << want.name;
    EXPECT_EQ(got->dtype, want.dtype) << want.name;
    EXPECT_EQ(got->shape, want.shape) << want.name;
    ASSERT_EQ(got->nbytes, want.nbytes) << want.name;
    EXPECT_EQ(std::memcmp(got->data, want.data, want.nbytes), 0) << want.name << " differs";
  }
  // llama.cpp's order: the embedding first, layer by layer, the final norm last (the head is tied).
  EXPECT_EQ(converted_->tensors().front().name, "token_embd.weight");
  EXPECT_EQ(converted_->tensors()[1].name, "blk.0.attn_norm.weight");
  EXPECT_EQ(converted_->tensors()[2].name, "blk.0.attn_q.weight");
  EXPECT_EQ(converted_->tensors().back().name, "output_norm.weight");
}

TEST_F(HfConvert, TheArchitecturePluginReadsTheOriginalsHyperParameters) {
  nlohmann::json want, got;
  add_architecture_view(want, *original_, test_registry());
  add_architecture_view(got, *converted_, test_registry());
  ASSERT_TRUE(want.contains("hparams")) << want.dump();
  ASSERT_TRUE(got.contains("hparams")) << got.dump();
  EXPECT_EQ(got["hparams"], want["hparams"]);  // rope_style "adjacent" in both: the Q/K rows were interleaved
  const GgufFile& g = *converted_->gguf();
  EXPECT_EQ(g.get_string("general.architecture"), "llama");
  EXPECT_EQ(g.get_string("general.name"), original_->gguf()->get_string("general.name"));
  EXPECT_EQ(g.get_int("general.file_type"), 0);  // ALL_F32
  // llama.cpp reads these keys as uint32 and float32 and refuses other types.
  for (const char* key : {"llama.block_count", "llama.context_length", "llama.embedding_length",
                          "llama.feed_forward_length", "llama.attention.head_count", "llama.attention.head_count_kv",
                          "llama.rope.dimension_count", "llama.vocab_size"}) {
    ASSERT_NE(g.find(key), nullptr) << key;
    EXPECT_EQ(g.find(key)->type(), GgufType::u32) << key;
  }
  for (const char* key : {"llama.rope.freq_base", "llama.attention.layer_norm_rms_epsilon"}) {
    ASSERT_NE(g.find(key), nullptr) << key;
    EXPECT_EQ(g.find(key)->type(), GgufType::f32) << key;
  }
}

TEST_F(HfConvert, TokenizerKeysAreTheOriginals) {
  const GgufFile& want = *original_->gguf();
  const GgufFile& got = *converted_->gguf();
  EXPECT_EQ(got.get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(got.get_string("tokenizer.ggml.pre"), want.get_string("tokenizer.ggml.pre"));
  EXPECT_EQ(got.get_string_array("tokenizer.ggml.tokens"), want.get_string_array("tokenizer.ggml.tokens"));
  EXPECT_EQ(got.get_string_array("tokenizer.ggml.merges"), want.get_string_array("tokenizer.ggml.merges"));
  EXPECT_EQ(got.get_int_array("tokenizer.ggml.token_type"), want.get_int_array("tokenizer.ggml.token_type"));
  for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                          "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id"})
    EXPECT_EQ(got.get_int(key), want.get_int(key)) << key;
  EXPECT_EQ(got.get_bool("tokenizer.ggml.add_bos_token").value_or(false),
            want.get_bool("tokenizer.ggml.add_bos_token").value_or(false));
  EXPECT_EQ(got.get_string("tokenizer.chat_template"), want.get_string("tokenizer.chat_template"));
}

// Quantizing the folder quantizes the GGUF it converts to: the same tensors
// as quantizing the control, and no temporary file left beside the output.
TEST_F(HfConvert, QuantizingTheFolderEqualsQuantizingTheControl) {
  const auto job_from = [](const fs::path& input, const fs::path& output) {
    QuantizeJob job;
    job.input = input.string();
    job.output = output.string();
    job.spec.method = "rtn";
    job.spec.format = "ggml.q4_0";
    job.spec.bits = 4;
    job.threads = 2;
    job.force = true;
    job.embedding_format = default_embedding_format("q4_0");
    job.head_format = default_head_format("q4_0");
    return job;
  };
  auto from_folder = quantize_model(job_from(folder(), convert_scratch("from_folder.gguf")), test_registry());
  ASSERT_TRUE(from_folder.ok()) << from_folder.status().message();
  EXPECT_EQ(from_folder->converted_from_folder, folder().string());
  EXPECT_GT(from_folder->converted_bytes, 0u);
  for (const auto& entry : fs::directory_iterator(convert_scratch("")))
    EXPECT_EQ(entry.path().string().find(".hf-"), std::string::npos) << entry.path() << ": the converted input was left";
  auto from_control = quantize_model(job_from(control_path(), convert_scratch("from_control.gguf")), test_registry());
  ASSERT_TRUE(from_control.ok()) << from_control.status().message();
  EXPECT_TRUE(from_control->converted_from_folder.empty());
  EXPECT_EQ(from_folder->weights.size(), 30u * 7u);

  auto a = open_model(convert_scratch("from_folder.gguf").string());
  auto b = open_model(convert_scratch("from_control.gguf").string());
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ((*a)->tensors().size(), (*b)->tensors().size());
  for (const TensorRef& want : (*b)->tensors()) {
    const TensorRef* got = (*a)->find(want.name);
    ASSERT_NE(got, nullptr) << want.name;
    EXPECT_EQ(got->dtype, want.dtype) << want.name;
    ASSERT_EQ(got->nbytes, want.nbytes) << want.name;
    EXPECT_EQ(std::memcmp(got->data, want.data, want.nbytes), 0) << want.name << " differs";
  }
}

// What most published checkpoints hold: bf16 stays bf16 (nothing is
// rounded), file type MOSTLY_BF16, and the folder quantizes from it.
TEST_F(HfConvert, Bf16FolderIsWrittenAsBf16AndQuantizes) {
  std::vector<std::shared_ptr<Quantizer>> quantizers;
  ASSERT_NO_FATAL_FAILURE(make_quantizers(test_registry(), quantizers));
  const fs::path bf16 = convert_scratch("bf16_folder");
  ASSERT_TRUE(export_hf_folder(*original_, quantizers, bf16, HfWeightType::bf16).ok());
  auto report = convert_model({bf16.string(), convert_scratch("bf16.gguf").string(), false}, test_registry());
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_GT(report->types["bf16"], 0);
  auto folder_file = open_model(bf16.string());
  auto converted = open_model(convert_scratch("bf16.gguf").string());
  ASSERT_TRUE(folder_file.ok() && converted.ok());
  EXPECT_EQ((*converted)->gguf()->get_int("general.file_type"), 32);  // MOSTLY_BF16
  const TensorRef* want = (*folder_file)->find("model.layers.3.mlp.down_proj.weight");
  const TensorRef* got = (*converted)->find("blk.3.ffn_down.weight");
  ASSERT_TRUE(want && got);
  EXPECT_EQ(got->dtype, DType::bf16);
  ASSERT_EQ(got->nbytes, want->nbytes);
  EXPECT_EQ(std::memcmp(got->data, want->data, want->nbytes), 0);
  // Norms become f32, as llama.cpp's converter writes them: its f32
  // operations take no bf16 operand.
  const TensorRef* norm = (*converted)->find("blk.3.ffn_norm.weight");
  const TensorRef* stored_norm = (*folder_file)->find("model.layers.3.post_attention_layernorm.weight");
  ASSERT_TRUE(norm && stored_norm);
  EXPECT_EQ(stored_norm->dtype, DType::bf16);
  ASSERT_EQ(norm->dtype, DType::f32);
  for (int64_t i = 0; i < norm->numel(); ++i) {
    uint16_t bits;
    std::memcpy(&bits, static_cast<const std::byte*>(stored_norm->data) + i * 2, 2);
    ASSERT_EQ(static_cast<const float*>(norm->data)[i], bf16_to_f32(bits)) << i;
  }

  QuantizeJob job;
  job.input = bf16.string();
  job.output = convert_scratch("bf16_q4_0.gguf").string();
  job.spec.method = "rtn";
  job.spec.format = "ggml.q4_0";
  job.spec.bits = 4;
  job.threads = 2;
  auto quantized = quantize_model(job, test_registry());
  ASSERT_TRUE(quantized.ok()) << quantized.status().message();
  EXPECT_EQ(quantized->weights.size(), 30u * 7u);
  for (const auto& w : quantized->weights) EXPECT_EQ(w.source_type, "bf16") << w.name;
}

TEST_F(HfConvert, RefusesWhatItCannotWrite) {
  // An output that exists, without force.
  auto exists = convert_model({folder().string(), control_path().string(), false}, test_registry());
  ASSERT_FALSE(exists.ok());
  EXPECT_EQ(exists.status().code(), StatusCode::invalid_argument);
  EXPECT_NE(exists.status().message().find("--force"), std::string::npos) << exists.status().message();
  // A GGUF file is not a folder.
  auto file = convert_model({kModel.string(), convert_scratch("x.gguf").string(), false}, test_registry());
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("not a folder"), std::string::npos) << file.status().message();
  EXPECT_FALSE(fs::exists(convert_scratch("x.gguf")));

  // Split rules no GGUF name gives: the folder with its tokenizer's digits grouped by three.
  const fs::path odd = convert_scratch("odd_tokenizer");
  fs::create_directories(odd);
  for (const char* name : {"config.json", "model.safetensors", "tokenizer_config.json"})
    fs::copy_file(folder() / name, odd / name, fs::copy_options::overwrite_existing);
  auto text = read_file(folder() / "tokenizer.json", "tokenizer");
  ASSERT_TRUE(text.ok());
  auto json = nlohmann::json::parse(*text);
  json["pre_tokenizer"] = {{"type", "Sequence"},
                           {"pretokenizers",
                            nlohmann::json::array({{{"type", "Digits"}, {"individual_digits", false}},
                                                   {{"type", "ByteLevel"},
                                                    {"add_prefix_space", false},
                                                    {"trim_offsets", true},
                                                    {"use_regex", true}}})}};
  {
    std::ofstream out(odd / "tokenizer.json");
    out << json.dump();
  }
  auto odd_report = convert_model({odd.string(), convert_scratch("odd.gguf").string(), false}, test_registry());
  ASSERT_FALSE(odd_report.ok());
  EXPECT_EQ(odd_report.status().code(), StatusCode::unsupported);
  EXPECT_NE(odd_report.status().message().find("tokenizer.ggml.pre"), std::string::npos)
      << odd_report.status().message();
  EXPECT_FALSE(fs::exists(convert_scratch("odd.gguf")));

  // A GPTQ checkpoint: its Linears are repacked blocks, not the stored tensors.
  const fs::path gptq = fs::path(TESSERA_SOURCE_DIR) / "tests/data/hf-quantized/gptq-act-order";
  auto repacked = convert_model({gptq.string(), convert_scratch("gptq.gguf").string(), false}, test_registry());
  ASSERT_FALSE(repacked.ok());
  EXPECT_NE(repacked.status().message().find("repacked"), std::string::npos) << repacked.status().message();
}

}  // namespace
}  // namespace tessera::test
