// The default model rewritten the way llama.cpp's K-quant mixes store a model
// of this width, then run through real pipelines: matrices whose rows are
// whole 256-element super-blocks (the down projections, rows of 1536) as
// Q4_K and Q6_K, the others (rows of 576) as Q5_0, Q5_1 and Q8_0. Hub files
// of this kind (SmolLM2-135M Q4_K_M) are mostly Q5_0; none can be fetched
// here, so the file is made from the default model with the quant plugin's
// reference quantizers. The formats' arithmetic is tested against the
// reference in plugins/quant/ggml/*_test.cpp; this checks the whole path (GGUF
// types, format choice, the quantized-domain drivers) on a real model.
#include <unistd.h>

#include <array>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "engine/perplexity.hpp"
#include "model/gguf_writer.hpp"
#include "model/model_file.hpp"
#include "model_fixture.hpp"
#include "reference.hpp"
#include "support/scratch_dir.hpp"

namespace tessera::test {
namespace {

namespace fs = std::filesystem;
using Overrides = std::vector<PipelineOverride>;

// The storage type of linear weight `name` (layer `layer`) with rows of `cols`.
DType mix_type(const std::string& name, int layer, int64_t cols) {
  if (cols % 256 == 0) return layer % 2 == 0 ? DType::q6_k : DType::q4_k;
  if (name.ends_with(".attn_v.weight")) return layer % 2 == 0 ? DType::q5_1 : DType::q8_0;
  return DType::q5_0;
}

// One row of f32 values as `type` blocks, with the reference quantizers.
void quantize_row(DType type, const float* x, uint8_t* out, int64_t n) {
  switch (type) {
    case DType::q5_0: ggml::quantize_row_q5_0(x, reinterpret_cast<ggml::BlockQ5_0*>(out), n); break;
    case DType::q5_1: ggml::quantize_row_q5_1(x, reinterpret_cast<ggml::BlockQ5_1*>(out), n); break;
    case DType::q8_0: ggml::quantize_row_q8_0(x, reinterpret_cast<ggml::BlockQ8_0*>(out), n); break;
    case DType::q4_k: ggml::quantize_row_q4_k(x, reinterpret_cast<ggml::BlockQ4K*>(out), n); break;
    default: ggml::quantize_row_q6_k(x, reinterpret_cast<ggml::BlockQ6K*>(out), n); break;
  }
}

Status write_kquant_mix(const ModelFile& original, const fs::path& file) {
  if (!original.gguf()) return InvalidArgument(original.source() + ": not a GGUF file");
  GgufWriter writer;
  for (const auto& [key, value] : original.gguf()->metadata())
    if (key != "general.alignment") writer.set(key, value);
  writer.set_u32("general.file_type", 15);  // llama.cpp's LLAMA_FTYPE_MOSTLY_Q4_K_M
  for (const TensorRef& tensor : original.tensors()) {
    const TensorRef* t = &tensor;
    std::vector<uint64_t> dims;  // GGUF order: innermost first
    for (int i = t->ndim - 1; i >= 0; --i) dims.push_back(static_cast<uint64_t>(t->shape[i]));
    int layer = -1;
    const bool linear = t->ndim == 2 && std::sscanf(t->name.c_str(), "blk.%d.", &layer) == 1;
    if (!linear) {  // embeddings, norms: as they are
      TESSERA_RETURN_IF_ERROR(writer.add_tensor(t->name, t->dtype, dims, {static_cast<const std::byte*>(t->data), t->nbytes}));
      continue;
    }
    const int64_t rows = t->rows(), cols = t->cols();
    const DType type = mix_type(t->name, layer, cols);
    const uint64_t in_row = dtype_row_bytes(t->dtype, static_cast<uint64_t>(cols));
    const uint64_t out_row = dtype_row_bytes(type, static_cast<uint64_t>(cols));
    std::vector<uint8_t> out(rows * out_row);
    std::vector<float> row(cols);
    for (int64_t r = 0; r < rows; ++r) {
      if (!ggml::dequantize_row(t->dtype, static_cast<const uint8_t*>(t->data) + r * in_row, row.data(), cols))
        return Unsupported(fmt::format("tensor '{}': no reference dequantizer for {}", t->name, dtype_name(t->dtype)));
      quantize_row(type, row.data(), out.data() + r * out_row, cols);
    }
    TESSERA_RETURN_IF_ERROR(writer.add_tensor(t->name, type, dims, std::as_bytes(std::span(out))));
  }
  return writer.write(file.string());
}

// The mixed file, written once per process into the temporary folder.
class KQuantMix : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(kModel)) {
      skip_ = kModel.string() + " is absent: run scripts/fetch-model.sh";
      return;
    }
    auto model = open_model(kModel.string());
    ASSERT_TRUE(model.ok()) << model.status().message();
    file_ = scratch_dir("tessera_integration_test") / fmt::format("tessera-kquant-mix-{}.gguf", getpid());
    const Status written = write_kquant_mix(**model, file_);
    ASSERT_TRUE(written.ok()) << written.message();
  }
  static void TearDownTestSuite() {
    if (!file_.empty()) fs::remove(file_);
  }
  void SetUp() override {
    if (!skip_.empty()) TESSERA_MODEL_ABSENT(skip_);
    ASSERT_TRUE(fs::exists(file_));
  }
  static Overrides on_mix(Overrides more = {}) {
    more.push_back({"model", "path", file_.string()});
    return more;
  }

  static inline std::string skip_;
  static inline fs::path file_;
};

TEST_F(KQuantMix, TheFileHoldsEveryFormatOfTheMix) {
  auto model = open_model(file_.string());
  ASSERT_TRUE(model.ok()) << model.status().message();
  std::map<std::string, int> count;
  for (const TensorRef& t : (*model)->tensors()) ++count[t.format];
  for (const char* format : {"ggml.q5_0", "ggml.q5_1", "ggml.q8_0", "ggml.q4_k", "ggml.q6_k"})
    EXPECT_GT(count[format], 0) << format;
  EXPECT_EQ(count["ggml.q5_0"], 30 * 5) << "q, k, o, gate and up of every layer";
  EXPECT_EQ(count["ggml.q4_k"] + count["ggml.q6_k"], 30) << "every down projection";
}

TEST_F(KQuantMix, QuickstartAndExactPipelinesAnswer) {
  for (const char* pipeline : {"quickstart.toml", "exact.toml"}) {
    SCOPED_TRACE(pipeline);
    TESSERA_OPEN_PIPELINE_OR_SKIP(session, kPipelines / pipeline, on_mix());
    auto r = session->generate(greedy("What is the capital of France? Answer in one sentence.", 16));
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_NE(r->text.find("Paris"), std::string::npos) << r->text;
  }
}

// The mix is the default model's weights stored again, mostly with more bits
// (Q5_0 for Q4_1): scored on ordinary English, its perplexity stays near the
// original's. A format read wrong anywhere would send it far away.
TEST_F(KQuantMix, PerplexityStaysNearTheOriginalModels) {
  const std::string text =
      "The river rose slowly through the night, and by morning the lower fields were under water. Farmers "
      "moved their animals to the hill behind the church, where the ground was dry, and the children "
      "carried bread and blankets up the path. Nobody in the village could remember a flood like it. The "
      "old miller said that his father had told him of one, long ago, when the bridge was carried away and "
      "the market was held on the other bank for a whole summer. By the third day the water began to fall, "
      "leaving mud in every kitchen and a smell of wet straw that lasted until the harvest.";
  double ppl[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    TESSERA_OPEN_OR_SKIP(session, i == 0 ? Overrides{} : on_mix());
    auto r = compute_perplexity(*session, text, 60);  // 2 windows of 60: 58 scored tokens
    ASSERT_TRUE(r.ok()) << r.status().message();
    ppl[i] = r->ppl;
  }
  std::printf("[ info ] perplexity: default model %.3f, K-quant mix %.3f\n", ppl[0], ppl[1]);
  EXPECT_TRUE(std::isfinite(ppl[1]));
  EXPECT_LT(std::fabs(std::log(ppl[1] / ppl[0])), 0.1) << "more than 10% apart";
}

}  // namespace
}  // namespace tessera::test
