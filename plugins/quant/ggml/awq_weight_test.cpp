// The ggml plugin's part of AWQ: the output error of rounding under input
// scales, the statistics rescaled once scales are chosen, and the clipping
// search, each against the definition computed directly in double.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ggml_testing.hpp"
#include "grid_quantize.hpp"
#include "weight_quantizer.hpp"

namespace tessera::ggml {
namespace {

using testing::random_floats;
using RowMajorMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

constexpr int64_t kRows = 24, kCols = 32 * 4, kInputs = 200;

// Inputs with a few channels far larger than the rest, as a transformer's
// activations have (the channels AWQ protects).
std::vector<float> inputs_with_outliers(uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(kInputs * kCols));
  for (int64_t i = 0; i < kInputs; ++i)
    for (int64_t c = 0; c < kCols; ++c) x[static_cast<size_t>(i * kCols + c)] = normal(rng) * (c % 29 == 3 ? 40.0f : 1.0f);
  return x;
}

// ||(W - V) Xᵀ||² in double, straight from the definition.
double lost(const std::vector<float>& w, const std::vector<float>& v, const std::vector<float>& x) {
  double sum = 0;
  for (int64_t i = 0; i < kInputs; ++i) {
    for (int64_t r = 0; r < kRows; ++r) {
      double d = 0;
      for (int64_t c = 0; c < kCols; ++c)
        d += (static_cast<double>(w[r * kCols + c]) - v[r * kCols + c]) * x[i * kCols + c];
      sum += d * d;
    }
  }
  return sum;
}

double energy(const std::vector<float>& w, const std::vector<float>& x) {
  return lost(w, std::vector<float>(w.size(), 0.0f), x);
}

// W·diag(s), or with divide, W·diag(1/s).
std::vector<float> scaled(std::vector<float> w, const std::vector<float>& s, bool divide = false) {
  for (size_t i = 0; i < w.size(); ++i) w[i] = divide ? w[i] / s[i % s.size()] : w[i] * s[i % s.size()];
  return w;
}

std::vector<float> rounded(DType type, const std::vector<float>& w) {
  std::vector<float> v(w.size());
  round_to_nearest(type, w.data(), kRows, kCols).values(v.data());
  return v;
}

std::unique_ptr<WeightQuantizer> observed(const std::vector<float>& x, bool clipping = false) {
  QuantizeSpec spec{.method = "awq", .format = "ggml.q4_1", .bits = 4, .group_size = 32, .symmetric = false};
  spec.search_clipping = clipping;
  auto wq = make_weight_quantizer(spec, kRows, kCols);
  EXPECT_TRUE(wq.ok()) << wq.status().message();
  EXPECT_TRUE((*wq)->wants_inputs());
  EXPECT_TRUE((*wq)->observe(x.data(), kInputs).ok());
  return std::move(wq).value();
}

// s_j = mean|x_j|^exponent: what the core's search tries.
std::vector<float> magnitude_scales(const std::vector<float>& x, double exponent) {
  std::vector<float> s(kCols, 0.0f);
  for (int64_t i = 0; i < kInputs; ++i)
    for (int64_t c = 0; c < kCols; ++c) s[c] += std::fabs(x[i * kCols + c]) / kInputs;
  for (float& v : s) v = static_cast<float>(std::pow(v, exponent));
  return s;
}

TEST(AwqWeight, RoundingErrorUnderScalesIsThatOfTheScaledProduct) {
  const auto w = random_floats(kRows * kCols, 1);
  const auto x = inputs_with_outliers(2);
  auto wq = observed(x);
  const double plain = lost(w, rounded(DType::q4_1, w), x);
  auto none = wq->rounding_output_error(w.data(), nullptr);
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_NEAR(*none, plain, 1e-3 * plain);
  const std::vector<float> ones(kCols, 1.0f);
  EXPECT_NEAR(*wq->rounding_output_error(w.data(), ones.data()), plain, 1e-3 * plain);

  // Q(W·diag(s))·diag(s)⁻¹ against W.
  const auto s = magnitude_scales(x, 0.5);
  const double direct = lost(w, scaled(rounded(DType::q4_1, scaled(w, s)), s, /*divide=*/true), x);
  auto under_s = wq->rounding_output_error(w.data(), s.data());
  ASSERT_TRUE(under_s.ok());
  EXPECT_NEAR(*under_s, direct, 1e-3 * direct);
  // The point of AWQ: scaling up the channels the inputs use most helps.
  EXPECT_LT(*under_s, 0.8 * plain);
}

TEST(AwqWeight, AfterScaleInputsQuantizeReportsTheOriginalOutputError) {
  const auto w = random_floats(kRows * kCols, 3);
  const auto x = inputs_with_outliers(4);
  const auto s = magnitude_scales(x, 0.4);
  auto wq = observed(x);
  ASSERT_TRUE(wq->scale_inputs(s.data()).ok());
  const auto ws = scaled(w, s);
  auto out = wq->quantize(ws.data());
  ASSERT_TRUE(out.ok()) << out.status().message();
  // Without the clipping search the bytes are plain rounding of W·diag(s).
  EXPECT_EQ(out->data, round_to_nearest(DType::q4_1, ws.data(), kRows, kCols).pack());
  const auto q = scaled(rounded(DType::q4_1, ws), s, /*divide=*/true);
  const double e = energy(w, x);
  EXPECT_NEAR(out->relative_error, lost(w, q, x) / e, 1e-3 * out->relative_error);
  const double rtn = lost(w, rounded(DType::q4_1, w), x) / e;
  EXPECT_NEAR(out->rounding_relative_error, rtn, 1e-3 * rtn);
  EXPECT_LT(out->relative_error, out->rounding_relative_error);
}

TEST(AwqWeight, ClippingNeverLosesToRoundingOnItsBlocks) {
  auto w = random_floats(kRows * kCols, 5);
  for (int64_t r = 0; r < kRows; ++r) w[r * kCols + 7] *= 6.0f;  // one large weight per row: worth clipping
  const auto x = inputs_with_outliers(6);
  const Eigen::Map<const RowMajorMatrix> inputs(x.data(), kInputs, kCols);
  const Eigen::MatrixXf h = inputs.transpose() * inputs;
  for (DType type : {DType::q4_0, DType::q4_1, DType::q5_0, DType::q8_0}) {
    const GridWeights clipped = round_to_nearest_clipped(type, w.data(), kRows, kCols, h);
    const GridWeights plain = round_to_nearest(type, w.data(), kRows, kCols);
    int better = 0;
    for (int64_t r = 0; r < kRows; ++r) {
      for (int64_t c0 = 0; c0 < kCols; c0 += 32) {
        Eigen::VectorXf ec(32), ep(32);
        for (int j = 0; j < 32; ++j) {
          ec[j] = w[r * kCols + c0 + j] - clipped.value(r, c0 + j);
          ep[j] = w[r * kCols + c0 + j] - plain.value(r, c0 + j);
        }
        const Eigen::MatrixXf hb = h.block(c0, c0, 32, 32);
        const float lc = ec.dot(hb * ec), lp = ep.dot(hb * ep);
        EXPECT_LE(lc, lp * (1 + 1e-5f)) << dtype_name(type) << " row " << r << " block " << c0 / 32;
        better += lc < 0.99f * lp;
      }
    }
    EXPECT_GT(better, 0) << dtype_name(type) << ": no block gained from clipping";
    // With no inputs every candidate scores 0 and the first, r = 1, is rounding itself.
    EXPECT_EQ(round_to_nearest_clipped(type, w.data(), kRows, kCols, Eigen::MatrixXf::Zero(kCols, kCols)).pack(),
              plain.pack())
        << dtype_name(type);
  }
  // Through the quantizer: the clipping search lowers the reported output error.
  auto with = observed(x, /*clipping=*/true), without = observed(x);
  EXPECT_LT(with->quantize(w.data())->relative_error, without->quantize(w.data())->relative_error);
}

TEST(AwqWeight, RefusesWhatItCannotDo) {
  const auto x = inputs_with_outliers(7);
  auto wq = observed(x);
  std::vector<float> s(kCols, 1.0f);
  s[5] = 0.0f;
  EXPECT_EQ(wq->scale_inputs(s.data()).message(), "scale_inputs: input scale 5 is not a positive number");
  s[5] = std::nanf("");
  EXPECT_EQ(wq->scale_inputs(s.data()).code(), StatusCode::invalid_argument);
  EXPECT_EQ(wq->scale_inputs(nullptr).code(), StatusCode::invalid_argument);

  QuantizeSpec rtn{.method = "rtn", .format = "ggml.q4_0", .bits = 4, .group_size = 32, .symmetric = true};
  auto plain = make_weight_quantizer(rtn, kRows, kCols);
  ASSERT_TRUE(plain.ok());
  const auto w = random_floats(kRows * kCols, 8);
  EXPECT_EQ((*plain)->rounding_output_error(w.data(), nullptr).status().code(), StatusCode::unsupported);
  EXPECT_EQ((*plain)->scale_inputs(s.data()).code(), StatusCode::unsupported);
  QuantizeSpec gptq = rtn;
  gptq.method = "gptq";
  gptq.search_clipping = true;
  auto refused = make_weight_quantizer(gptq, kRows, kCols);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(), "the clipping search is an AWQ setting");
}

}  // namespace
}  // namespace tessera::ggml
