// Hugging Face GPTQ and AWQ checkpoints packed by the reference packers
// themselves (tests/data/hf-quantized, made by tools/hf-quantized-reference:
// AutoGPTQ's exllama pack with act-order, AutoAWQ's GEMM pack), run from
// their packed tensors: the logits at every position of a held-out text
// follow transformers' float32 logits of the weights the packers were given.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>

#include "engine/model_builder.hpp"
#include "model/model_file.hpp"
#include "model_fixture.hpp"

namespace tessera::test {
namespace {

namespace fs = std::filesystem;

const fs::path kHfQuantizedData = fs::path(TESSERA_SOURCE_DIR) / "tests" / "data" / "hf-quantized";

struct Checkpoint {
  std::string folder;
  // The blocks hold the checkpoint's weights exactly (GPTQ, symmetric, in
  // Q4_0; AWQ, with zero points, in Q5_0: model/hf_quantized.hpp), so
  // only f32 rounding parts the logits from transformers'.
  std::string block_type;
};

class HfQuantizedCheckpoints : public ::testing::TestWithParam<Checkpoint> {};

std::vector<int32_t> heldout_ids() {
  std::ifstream in(kHfQuantizedData / "heldout.txt");
  std::vector<int32_t> ids;
  for (int32_t id; in >> id;) ids.push_back(id);
  return ids;
}

std::unique_ptr<Session> open_checkpoint(const std::string& folder, const std::string& pipeline) {
  const fs::path model = kHfQuantizedData / folder;
  EXPECT_TRUE(fs::exists(model)) << model << " is missing: it is checked in (tools/hf-quantized-reference makes it)";
  return open_session(kPipelines / pipeline, {{"model", "path", model.string(), /*verbatim=*/true}});
}

// Worst relative logit difference over positions; fails past `tolerance`.
double compare_logits(const std::vector<float>& got, const std::vector<float>& want, size_t positions, size_t vocab,
                      double tolerance) {
  double worst = 0;
  for (size_t t = 0; t < positions; ++t) {
    double diff = 0, scale = 0;
    for (size_t v = 0; v < vocab; ++v) {
      diff = std::max(diff, std::abs(static_cast<double>(got[t * vocab + v]) - want[t * vocab + v]));
      scale = std::max(scale, std::abs(static_cast<double>(want[t * vocab + v])));
    }
    worst = std::max(worst, diff / scale);
    EXPECT_LT(diff / scale, tolerance) << "position " << t;
  }
  return worst;
}

std::vector<float> expected_logits(const std::string& folder, size_t n) {
  std::vector<float> expected(n);
  std::ifstream file(kHfQuantizedData / (folder + ".logits.f32"), std::ios::binary);
  file.read(reinterpret_cast<char*>(expected.data()), static_cast<std::streamsize>(n * 4));
  EXPECT_EQ(file.gcount(), static_cast<std::streamsize>(n * 4));
  return expected;
}

// pipelines/exact.toml: f32 activations, so only the weights' storage differs from transformers.
TEST_P(HfQuantizedCheckpoints, LogitsFollowTransformersOnThePackersWeights) {
  const std::vector<int32_t> ids = heldout_ids();
  ASSERT_EQ(ids.size(), 64u);
  auto session = open_checkpoint(GetParam().folder, "exact.toml");
  ASSERT_NE(session, nullptr);
  const auto vocab = static_cast<size_t>(session->vocab_size());
  ASSERT_EQ(vocab, 2048u);
  auto logits = session->score(ids);
  ASSERT_TRUE(logits.ok()) << logits.status().message();
  const double worst =
      compare_logits(*logits, expected_logits(GetParam().folder, ids.size() * vocab), ids.size(), vocab, 1e-5);
  std::printf("%s: largest relative logit difference from transformers over %zu positions: %.2e\n",
              GetParam().folder.c_str(), ids.size(), worst);
}

// What the loader made of the packed tensors: one block tensor per Linear
// under its weight name, the packed ones gone, act-order's column order kept.
TEST_P(HfQuantizedCheckpoints, EachLinearIsOneBlockTensorUnderItsWeightName) {
  auto model = open_model((kHfQuantizedData / GetParam().folder).string());
  ASSERT_TRUE(model.ok()) << model.status().message();
  const std::string base = "model.layers.1.mlp.down_proj";
  const TensorRef* weight = (*model)->find(base + ".weight");
  ASSERT_NE(weight, nullptr);
  EXPECT_EQ(dtype_name(weight->dtype), GetParam().block_type);
  EXPECT_EQ(weight->shape[0], 128);
  EXPECT_EQ(weight->shape[1], 256);
  for (const char* part : {".qweight", ".qzeros", ".scales", ".g_idx"})
    EXPECT_EQ((*model)->find(base + part), nullptr) << part;
  EXPECT_EQ((*model)->input_order(base + ".weight") != nullptr, GetParam().folder == "gptq-act-order");
  EXPECT_NE((*model)->repacked_from().find("4-bit, group size 32"), std::string::npos) << (*model)->repacked_from();
}

// An act-order weight's columns are stored by group; its Linear gathers the
// input to match, and dequantizing it puts the columns back in input order:
// so W·x from the dequantized weight equals the Linear's output.
TEST(HfQuantizedActOrder, DequantizedColumnsAreInInputOrderAsTheLinearReadsThem) {
  auto model = open_model((kHfQuantizedData / "gptq-act-order").string());
  ASSERT_TRUE(model.ok()) << model.status().message();
  std::vector<std::shared_ptr<Quantizer>> quantizers;
  ASSERT_NO_FATAL_FAILURE(make_quantizers(test_registry(), quantizers));
  CoreModelBuilder builder(**model, quantizers, /*make_attention=*/{});
  const std::string name = "model.layers.0.mlp.down_proj.weight";
  const TensorRef* weight = (*model)->find(name);
  ASSERT_NE(weight, nullptr);
  ASSERT_NE((*model)->input_order(name), nullptr);
  const int64_t out = weight->shape[0], in = weight->shape[1];
  std::vector<float> w(static_cast<size_t>(out * in));
  ASSERT_TRUE(builder.dequantize(*weight, w.data()).ok());
  std::vector<float> row(static_cast<size_t>(in));
  ASSERT_TRUE(builder.dequantize_rows(*weight, 5, 1, row.data()).ok());
  EXPECT_TRUE(std::equal(row.begin(), row.end(), w.begin() + 5 * in)) << "rows as the whole";

  auto linear = builder.linear(name);
  ASSERT_TRUE(linear.ok()) << linear.status().message();
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(in)), y(static_cast<size_t>(out));
  for (float& v : x) v = normal(rng);
  ASSERT_TRUE((*linear)->forward(x.data(), y.data(), 1).ok());
  double err = 0, norm = 0;
  for (int64_t o = 0; o < out; ++o) {
    double want = 0;
    for (int64_t c = 0; c < in; ++c) want += static_cast<double>(w[o * in + c]) * x[c];
    err = std::max(err, std::abs(want - y[o]));
    norm = std::max(norm, std::abs(want));
  }
  // The Linear's default activations are two 8-bit terms; a misplaced column
  // would be off by the order of the outputs themselves.
  EXPECT_LT(err / norm, 1e-2) << "largest |W·x − Linear(x)| / largest |W·x|";
}

// The default pipeline (two 8-bit activation terms) on the same blocks:
// within the activations' rounding of the exact logits.
TEST_P(HfQuantizedCheckpoints, TheDefaultPipelineRunsThemToo) {
  const std::vector<int32_t> ids = heldout_ids();
  auto session = open_checkpoint(GetParam().folder, "quickstart.toml");
  ASSERT_NE(session, nullptr);
  const auto vocab = static_cast<size_t>(session->vocab_size());
  auto logits = session->score(ids);
  ASSERT_TRUE(logits.ok()) << logits.status().message();
  const double worst =
      compare_logits(*logits, expected_logits(GetParam().folder, ids.size() * vocab), ids.size(), vocab, 5e-3);
  std::printf("%s, default activations: largest relative logit difference %.2e\n", GetParam().folder.c_str(),
              worst);
}

INSTANTIATE_TEST_SUITE_P(ReferencePacked, HfQuantizedCheckpoints,
                         ::testing::Values(Checkpoint{"gptq-act-order", "q4_0"}, Checkpoint{"awq-gemm", "q5_0"}),
                         [](const auto& info) {
                           std::string name = info.param.folder;
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

}  // namespace
}  // namespace tessera::test
