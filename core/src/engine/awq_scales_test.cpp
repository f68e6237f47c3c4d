// AWQ's scale groups (which Linears share an input, and where 1/s goes) and
// the exponent search, against a fake quantizer whose error is known.
#include "engine/awq_scales.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

namespace tessera {
namespace {

using Shapes = std::map<std::string, std::vector<int64_t>>;

// A Llama-family layer 3 with `heads` query heads and `kv_heads` key/value heads of 8.
Shapes llama_layer(int64_t heads, int64_t kv_heads) {
  constexpr int64_t kHidden = 64, kFfn = 96;
  return {{"blk.3.attn_norm.weight", {kHidden}},
          {"blk.3.attn_q.weight", {heads * 8, kHidden}},
          {"blk.3.attn_k.weight", {kv_heads * 8, kHidden}},
          {"blk.3.attn_v.weight", {kv_heads * 8, kHidden}},
          {"blk.3.attn_output.weight", {kHidden, heads * 8}},
          {"blk.3.ffn_norm.weight", {kHidden}},
          {"blk.3.ffn_gate.weight", {kFfn, kHidden}},
          {"blk.3.ffn_up.weight", {kFfn, kHidden}},
          {"blk.3.ffn_down.weight", {kHidden, kFfn}}};
}

std::string describe(const ScaleGroup& g) {
  std::string s = g.folds_into + (g.fold == ScaleGroup::Fold::norm ? " (norm) ->" : " (rows) ->");
  for (const auto& m : g.members) s += " " + m;
  return s;
}

std::vector<std::string> describe(const std::vector<ScaleGroup>& groups) {
  std::vector<std::string> out;
  for (const auto& g : groups) out.push_back(describe(g));
  return out;
}

TEST(AwqScaleGroups, MultiHeadAttentionHasFourGroups) {
  EXPECT_EQ(describe(awq_scale_groups(3, llama_layer(8, 8))),
            (std::vector<std::string>{
                "blk.3.attn_norm.weight (norm) -> blk.3.attn_q.weight blk.3.attn_k.weight blk.3.attn_v.weight",
                "blk.3.attn_v.weight (rows) -> blk.3.attn_output.weight",
                "blk.3.ffn_norm.weight (norm) -> blk.3.ffn_gate.weight blk.3.ffn_up.weight",
                "blk.3.ffn_up.weight (rows) -> blk.3.ffn_down.weight"}));
}

TEST(AwqScaleGroups, GroupedQueryAttentionLeavesVToOOut) {
  const auto groups = describe(awq_scale_groups(3, llama_layer(8, 2)));
  ASSERT_EQ(groups.size(), 3u);
  for (const auto& g : groups) EXPECT_EQ(g.find("attn_output"), std::string::npos) << g;
}

TEST(AwqScaleGroups, MissingOrMismatchedTensorsDropTheirGroup) {
  auto shapes = llama_layer(8, 8);
  shapes.erase("blk.3.attn_norm.weight");
  shapes["blk.3.ffn_norm.weight"] = {32};  // not the Linears' input width
  EXPECT_EQ(describe(awq_scale_groups(3, shapes)),
            (std::vector<std::string>{"blk.3.attn_v.weight (rows) -> blk.3.attn_output.weight",
                                      "blk.3.ffn_up.weight (rows) -> blk.3.ffn_down.weight"}));
  EXPECT_TRUE(awq_scale_groups(4, llama_layer(8, 8)).empty());  // another layer's names
}

// Its rounding error is sum_j (log s_j - best · log m_j)², least where s = m^best.
class FakeQuantizer final : public WeightQuantizer {
 public:
  FakeQuantizer(std::vector<float> magnitude, double best) : magnitude_(std::move(magnitude)), best_(best) {}
  bool wants_inputs() const noexcept override { return true; }
  Status observe(const float*, int64_t) noexcept override { return Status::Ok(); }
  Result<QuantizedWeight> quantize(const float*) noexcept override { return Unsupported("fake"); }
  Result<double> rounding_output_error(const float*, const float* s) noexcept override {
    if (fail_) return Internal("fake failure");
    ++calls_;
    double e = 0;
    for (size_t j = 0; j < magnitude_.size(); ++j) {
      // Scale-free: the normalisation of s must not move the optimum.
      const double d = std::log(s[j] / s[0]) - best_ * std::log(magnitude_[j] / magnitude_[0]);
      e += d * d;
    }
    return e;
  }
  std::vector<float> magnitude_;
  double best_;
  bool fail_ = false;
  int calls_ = 0;
};

TEST(AwqScaleSearch, FindsTheExponentThatRoundsBest) {
  const std::vector<float> magnitude = {0.5f, 2.0f, 8.0f, 0.01f, 1.0f};
  FakeQuantizer a(magnitude, 0.35), b(magnitude, 0.35);
  const float weight = 0;
  const ScaleMember members[] = {{&weight, &a}, {&weight, &b}};
  auto found = search_input_scales(members, magnitude);
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_NEAR(found->exponent, 0.35, 1e-9);
  EXPECT_EQ(a.calls_, 20);
  EXPECT_EQ(b.calls_, 20);
  EXPECT_NEAR(found->loss, 0.0, 1e-9);
  EXPECT_GT(found->unscaled_loss, 0.1);
  // s = m^0.35 normalised so that max · min = 1.
  const auto [lo, hi] = std::minmax_element(found->scales.begin(), found->scales.end());
  EXPECT_NEAR(*lo * *hi, 1.0f, 1e-5f);
  for (size_t j = 0; j < magnitude.size(); ++j)
    EXPECT_NEAR(found->scales[j] / found->scales[0], std::pow(magnitude[j] / magnitude[0], 0.35), 1e-4);
}

TEST(AwqScaleSearch, PlainRoundingWinsTiesAndErrorsPropagate) {
  const std::vector<float> magnitude = {1.0f, 1.0f, 1.0f};  // every exponent gives s = 1
  FakeQuantizer q(magnitude, 0.0);
  const float weight = 0;
  const ScaleMember member[] = {{&weight, &q}};
  auto found = search_input_scales(member, magnitude);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->exponent, 0.0);
  EXPECT_EQ(found->scales, std::vector<float>(3, 1.0f));

  q.fail_ = true;
  EXPECT_EQ(search_input_scales(member, magnitude).status().message(), "fake failure");
  EXPECT_EQ(search_input_scales({}, magnitude).status().code(), StatusCode::invalid_argument);
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// s_j = max|x_j|^a / max|W_j|^(1-a) over both members' column j; channels
// the inputs never reached, or with all-zero weights, keep 1.
TEST(SmoothQuantScales, BalanceEachChannelsInputAndWeightMaxima) {
  // Two members of 2 rows x 4 columns; column 3 is zero in both.
  const float a[] = {1.0f, -2.0f, 0.5f, 0.0f,  //
                     -4.0f, 1.0f, 0.25f, 0.0f};
  const float b[] = {2.0f, 0.5f, -8.0f, 0.0f,  //
                     0.5f, 0.5f, 1.0f, 0.0f};
  const ScaleMember members[] = {{a, nullptr, 2}, {b, nullptr, 2}};
  const float max_x[] = {16.0f, 0.0f, 2.0f, 5.0f};
  auto s = smoothquant_scales(members, max_x, 0.5);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->size(), 4u);
  EXPECT_FLOAT_EQ((*s)[0], 2.0f);  // sqrt(16) / sqrt(4)
  EXPECT_FLOAT_EQ((*s)[1], 1.0f) << "never reached by the inputs";
  EXPECT_FLOAT_EQ((*s)[2], std::sqrt(2.0f) / std::sqrt(8.0f));
  EXPECT_FLOAT_EQ((*s)[3], 1.0f) << "all-zero weights";
  // After dividing the inputs by s and scaling the weights by it, both
  // maxima of a channel meet at max|x|^a max|W|^(1-a).
  EXPECT_FLOAT_EQ(max_x[0] / (*s)[0], 4.0f * (*s)[0]);
  const auto strong = smoothquant_scales(members, max_x, 0.8);
  ASSERT_TRUE(strong.ok());
  EXPECT_FLOAT_EQ((*strong)[0], static_cast<float>(std::pow(16.0, 0.8) / std::pow(4.0, 0.2)));
  EXPECT_FALSE(smoothquant_scales(members, max_x, 0.0).ok());
  EXPECT_FALSE(smoothquant_scales(members, max_x, 1.0).ok());
  EXPECT_FALSE(smoothquant_scales({}, max_x, 0.5).ok());
}

// The search scores alpha = 0, 1/grid, ... with SmoothQuant's scales for
// each and keeps the least error; alpha 0 (s = 1) wins ties.
TEST(SmoothQuantSearch, KeepsTheAlphaOfLeastErrorAndNoMigrationOnTies) {
  const float a[] = {1.0f, -2.0f, 0.5f, 4.0f};  // 1 row x 4 columns
  const ScaleMember members[] = {{a, nullptr, 1}};
  const float max_x[] = {16.0f, 1.0f, 2.0f, 0.5f};
  // Channel 0's weight maximum is 1, so s_0 = 16^alpha: the error |s_0 - 2|
  // is least at alpha 0.25.
  std::vector<double> scored;
  const auto error_at = [&](double target) {
    return [&scored, target](std::span<const float> s) -> Result<double> {
      scored.push_back(s[0]);
      return std::fabs(s[0] - target);
    };
  };
  auto best = search_smoothing(members, max_x, 4, error_at(2.0));  // s_0 = 16^a: 1, 2, 4, 8
  ASSERT_TRUE(best.ok()) << best.status().message();
  EXPECT_EQ(scored.size(), 4u);
  EXPECT_DOUBLE_EQ(best->alpha, 0.25);
  EXPECT_FLOAT_EQ(best->scales[0], 2.0f);
  EXPECT_DOUBLE_EQ(best->error, 0.0);
  EXPECT_DOUBLE_EQ(best->unsmoothed_error, 1.0);
  const auto direct = smoothquant_scales(members, max_x, 0.25);
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(best->scales, *direct);

  auto flat = search_smoothing(members, max_x, 4, [](std::span<const float>) -> Result<double> { return 3.0; });
  ASSERT_TRUE(flat.ok());
  EXPECT_DOUBLE_EQ(flat->alpha, 0.0) << "ties keep no migration";
  EXPECT_EQ(flat->scales, std::vector<float>(4, 1.0f));

  auto failing = search_smoothing(members, max_x, 4, [](std::span<const float>) -> Result<double> {
    return Internal("the plugin failed");
  });
  EXPECT_FALSE(failing.ok());
  EXPECT_FALSE(search_smoothing(members, max_x, 0, error_at(1.0)).ok());
  EXPECT_FALSE(search_smoothing({}, max_x, 4, error_at(1.0)).ok());
}

}  // namespace
}  // namespace tessera
