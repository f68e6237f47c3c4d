// Tests of the int8 plugin: the panel layout, every level's integer kernels
// against direct sums, the Linear at every level against the scalar level's
// bits and a float64 reference, the quantizer, and the built plugin.
#include <gtest/gtest.h>
#include <omp.h>

#include <boost/dll/shared_library.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "hadamard_rotation.hpp"
#include "rowwise_quantizer.hpp"
#include "tessera/plugin.hpp"
#include "tessera/quantizer.hpp"
#include "w8a8_kernels.hpp"
#include "w8a8_layout.hpp"
#include "w8a8_linear.hpp"

namespace tessera::int8 {
namespace {

std::vector<int8_t> random_int8(size_t n, uint32_t seed, int lo = -127, int hi = 127) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<int8_t> v(n);
  for (auto& x : v) x = static_cast<int8_t>(dist(rng));
  return v;
}

std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Forces a level for the object's lifetime; ok() is false when the CPU lacks it.
class ScopedLevel {
 public:
  explicit ScopedLevel(IsaLevel level) : ok_(force_isa_level(level)) {}
  ~ScopedLevel() { (void)force_isa_level(best_isa_level()); }
  bool ok() const { return ok_; }

 private:
  bool ok_;
};

// Rows of 100 inputs (whole 4-byte slots) and of 103 (pack_weight writes
// the last 3 one at a time).
TEST(W8A8Layout, PanelsHoldEveryWeightAndZerosPastTheEdges) {
  for (const int64_t in : {100, 103}) {
    const int64_t out = 37;
    const auto w = random_int8(static_cast<size_t>(out * in), 1);
    std::vector<float> scales(out, 0.5f);
    const PackedWeight p = pack_weight(w.data(), scales.data(), out, in);
    EXPECT_EQ(p.n_panels, 3);
    EXPECT_EQ(p.k_chunks, 2);
    for (int64_t o = 0; o < p.n_panels * kPanelRows; ++o) {
      int32_t sum = 0;
      for (int64_t k = 0; k < p.in_padded(); ++k) {
        const int8_t expected = o < out && k < in ? w[o * in + k] : 0;
        ASSERT_EQ(packed_value(p, o, k), expected) << "in " << in << ": " << o << "," << k;
        sum += expected;
      }
      EXPECT_EQ(p.row_sums[o], sum) << "in " << in;
      EXPECT_EQ(p.scales[o], o < out ? 0.5f : 0.0f) << "in " << in;
    }
  }
}

TEST(W8A8Activations, RoundToNearestEvenWithTheRowsScale) {
  // max |x| = 127, so x / sx = x: halves go to the even neighbour.
  const std::vector<float> x = {127.0f, 0.5f, 1.5f, 2.5f, -2.5f, -0.4f, 3.6f};
  std::vector<int8_t> q(64, 99);
  const float sx = quantize_activation_row(x.data(), 7, 64, q.data());
  EXPECT_EQ(sx, 1.0f);
  EXPECT_EQ(std::vector<int>(q.begin(), q.begin() + 7), (std::vector<int>{127, 0, 2, 2, -2, 0, 4}));
  for (int k = 7; k < 64; ++k) EXPECT_EQ(q[k], 0);
  const std::vector<float> zeros(5, 0.0f);
  EXPECT_EQ(quantize_activation_row(zeros.data(), 5, 64, q.data()), 0.0f);
  const std::vector<float> tiny(5, 1e-38f);  // 127 / max overflows: a row of zeros
  EXPECT_EQ(quantize_activation_row(tiny.data(), 5, 64, q.data()), 0.0f);
  EXPECT_EQ(q[0], 0);
  std::vector<float> bad = {1.0f, std::numeric_limits<float>::quiet_NaN(), 2.0f};
  EXPECT_TRUE(std::isnan(quantize_activation_row(bad.data(), 3, 64, q.data())));
  bad[1] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isnan(quantize_activation_row(bad.data(), 3, 64, q.data())));
}

class W8A8Level : public ::testing::TestWithParam<IsaLevel> {
 protected:
  void SetUp() override {
    if (!cpu_supports(GetParam()))
      GTEST_SKIP() << "this CPU lacks " << isa_level_name(GetParam()) << "; its kernels are tested where it has it";
  }
};

// sum_k W[r][k] * x[xi][k] from the unpacked values.
int32_t direct_sum(const std::vector<int8_t>& w, int64_t in, int64_t r, const int8_t* x) {
  int32_t s = 0;
  for (int64_t k = 0; k < in; ++k) s += w[r * in + k] * x[k];
  return s;
}

TEST_P(W8A8Level, PanelDotGivesTheExactSums) {
  const KernelTable* k = kernels_for(GetParam());
  ASSERT_NE(k, nullptr);
  for (const int64_t in : {64, 100, 576, 4096}) {
    const int64_t out = 32;
    const auto w = random_int8(static_cast<size_t>(out * in), 2 + static_cast<uint32_t>(in));
    std::vector<float> scales(out, 1.0f);
    const PackedWeight p = pack_weight(w.data(), scales.data(), out, in);
    const size_t stride = static_cast<size_t>(p.in_padded());
    std::vector<int8_t> x = random_int8(stride * kMaxDotRows, 7 + static_cast<uint32_t>(in));
    for (int xi = 0; xi < kMaxDotRows; ++xi) std::fill(x.begin() + xi * stride + in, x.begin() + (xi + 1) * stride, 0);
    for (int nx = 1; nx <= kMaxDotRows; ++nx) {
      for (int64_t panel = 0; panel < p.n_panels; ++panel) {
        int32_t acc[kMaxDotRows * kPanelRows];
        k->panel_dot(p.panel(panel), p.row_sums.data() + panel * kPanelRows, p.k_chunks, x.data(), stride, nx, acc);
        for (int xi = 0; xi < nx; ++xi)
          for (int r = 0; r < kPanelRows; ++r)
            ASSERT_EQ(acc[xi * kPanelRows + r], direct_sum(w, in, panel * kPanelRows + r, x.data() + xi * stride))
                << k->name << " in " << in << " nx " << nx << " row " << r;
      }
    }
  }
}

TEST_P(W8A8Level, ExtremesDoNotOverflow) {
  const KernelTable* k = kernels_for(GetParam());
  ASSERT_NE(k, nullptr);
  const int64_t out = 32, in = 8192;
  std::vector<int8_t> w(static_cast<size_t>(out * in), 127);
  for (int64_t k2 = 0; k2 < in; ++k2) w[static_cast<size_t>(16 * in + k2)] = -127;  // the second panel negative
  std::vector<float> scales(out, 1.0f);
  const PackedWeight p = pack_weight(w.data(), scales.data(), out, in);
  const size_t stride = static_cast<size_t>(p.in_padded());
  std::vector<int8_t> x(stride * kTileBlockRows, -127);
  int32_t acc[kMaxDotRows * kPanelRows];
  k->panel_dot(p.panel(0), p.row_sums.data(), p.k_chunks, x.data(), stride, 2, acc);
  EXPECT_EQ(acc[0], -127 * 127 * in);
  k->panel_dot(p.panel(1), p.row_sums.data() + kPanelRows, p.k_chunks, x.data(), stride, 2, acc);
  EXPECT_EQ(acc[0], 127 * 127 * in);
  if (k->panel_tiles != nullptr) {
    std::vector<int32_t> tiles(kTileBlockRows * kTileBlockRows);
    k->panel_tiles(p.panel(0), p.panel_bytes(), p.k_chunks, x.data(), stride, tiles.data());
    EXPECT_EQ(tiles[0], -127 * 127 * in);
    EXPECT_EQ(tiles[31 * kTileBlockRows + 16], 127 * 127 * in);
  }
}

TEST_P(W8A8Level, PanelTilesGiveTheExactSums) {
  const KernelTable* k = kernels_for(GetParam());
  ASSERT_NE(k, nullptr);
  if (k->panel_tiles == nullptr) GTEST_SKIP() << k->name << " has no tile kernel (the amx level's only)";
  for (const int64_t in : {64, 200, 1536}) {
    const int64_t out = 32;
    const auto w = random_int8(static_cast<size_t>(out * in), 11 + static_cast<uint32_t>(in));
    std::vector<float> scales(out, 1.0f);
    const PackedWeight p = pack_weight(w.data(), scales.data(), out, in);
    const size_t stride = static_cast<size_t>(p.in_padded());
    std::vector<int8_t> x = random_int8(stride * kTileBlockRows, 13 + static_cast<uint32_t>(in), -128, 127);
    for (int xi = 0; xi < kTileBlockRows; ++xi)
      std::fill(x.begin() + xi * stride + in, x.begin() + (xi + 1) * stride, 0);
    std::vector<int32_t> acc(kTileBlockRows * kTileBlockRows);
    k->panel_tiles(p.panel(0), p.panel_bytes(), p.k_chunks, x.data(), stride, acc.data());
    for (int xi = 0; xi < kTileBlockRows; ++xi)
      for (int r = 0; r < kTileBlockRows; ++r)
        ASSERT_EQ(acc[xi * kTileBlockRows + r], direct_sum(w, in, r, x.data() + xi * stride))
            << "in " << in << " x row " << xi << " w row " << r;
  }
}

// A Linear over random weights, quantized by the plugin's own quantizer.
struct LinearCase {
  int64_t out, in;
  std::vector<float> weight;  // the original f32 [out, in]
  std::vector<int8_t> q;
  std::vector<float> scales;
  std::vector<float> bias;
  LinearCase(int64_t out_, int64_t in_, uint32_t seed)
      : out(out_), in(in_), weight(random_floats(static_cast<size_t>(out_ * in_), seed, 0.05f)),
        q(static_cast<size_t>(out_ * in_)), scales(static_cast<size_t>(out_)),
        bias(random_floats(static_cast<size_t>(out_), seed + 1)) {
    quantize_rows(weight.data(), out, in, q.data(), scales.data());
  }
  W8A8Linear linear(bool two_terms = false) const {
    return W8A8Linear(pack_weight(q.data(), scales.data(), out, in), bias, two_terms);
  }
};

std::vector<float> run(const LinearCase& c, const std::vector<float>& x, int64_t rows, bool two_terms = false) {
  W8A8Linear l = c.linear(two_terms);
  std::vector<float> y(static_cast<size_t>(rows * c.out), -1.0f);
  EXPECT_TRUE(l.forward(x.data(), y.data(), rows).ok());
  return y;
}

TEST_P(W8A8Level, LinearGivesTheScalarLevelsBits) {
  const LinearCase c(70, 300, 21);  // 5 panels: the tiles take two pairs, the dot the last
  for (const bool two_terms : {false, true}) {
    for (const int64_t rows : {1, 3, 5, 32, 33, 70}) {
      const auto x = random_floats(static_cast<size_t>(rows * c.in), 30 + static_cast<uint32_t>(rows));
      std::vector<float> expected;
      {
        ScopedLevel scalar(IsaLevel::scalar);
        expected = run(c, x, rows, two_terms);
      }
      ScopedLevel level(GetParam());
      ASSERT_TRUE(level.ok());
      const auto y = run(c, x, rows, two_terms);
      ASSERT_EQ(std::memcmp(y.data(), expected.data(), y.size() * sizeof(float)), 0)
          << isa_level_name(GetParam()) << " with " << rows << " rows" << (two_terms ? ", two terms" : "");
    }
  }
}

TEST_P(W8A8Level, PrepareAndComputeInRangesGiveForwardsBits) {
  ScopedLevel level(GetParam());
  ASSERT_TRUE(level.ok());
  const LinearCase c(70, 200, 81);  // 5 panels: units of 32 columns, the last one short
  for (const int64_t rows : {1, 3, 40, -40}) {  // -40: 40 rows with two terms
    const bool two_terms = rows < 0;
    const int64_t n = std::abs(rows);
    const auto x = random_floats(static_cast<size_t>(n * c.in), 82 + static_cast<uint32_t>(n));
    const auto expected = run(c, x, n, two_terms);
    W8A8Linear l = c.linear(two_terms);
    ASSERT_TRUE(l.splits());
    ASSERT_EQ(l.column_alignment(), 32);
    std::vector<float> y(expected.size(), -1.0f);
    ASSERT_TRUE(l.prepare(x.data(), n).ok());
    l.compute(y.data(), 64, 70);
    l.compute(y.data(), 0, 32);
    l.compute(y.data(), 32, 64);
    ASSERT_EQ(std::memcmp(y.data(), expected.data(), y.size() * sizeof(float)), 0) << rows << " rows";
  }
}

// The engine's threads call compute() on disjoint ranges at once.
TEST_P(W8A8Level, ComputeOnThreadsAtOnceGivesForwardsBits) {
  ScopedLevel level(GetParam());
  ASSERT_TRUE(level.ok());
  const LinearCase c(200, 256, 91);  // 7 units of 32 columns
  for (const int64_t rows : {1, 4, 48}) {
    const auto x = random_floats(static_cast<size_t>(rows * c.in), 92 + static_cast<uint32_t>(rows));
    const auto expected = run(c, x, rows);
    W8A8Linear l = c.linear();
    std::vector<float> y(expected.size(), -1.0f);
    ASSERT_TRUE(l.prepare(x.data(), rows).ok());
    std::vector<std::thread> threads;
    for (int64_t begin = 0; begin < c.out; begin += 32)
      threads.emplace_back([&, begin] { l.compute(y.data(), begin, std::min<int64_t>(begin + 32, c.out)); });
    for (auto& t : threads) t.join();
    ASSERT_EQ(std::memcmp(y.data(), expected.data(), y.size() * sizeof(float)), 0) << rows << " rows";
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, W8A8Level,
                         ::testing::Values(IsaLevel::scalar, IsaLevel::avx2, IsaLevel::avx512,
                                           IsaLevel::avx512_vnni, IsaLevel::amx),
                         [](const ::testing::TestParamInfo<IsaLevel>& info) {
                           return std::string(isa_level_name(info.param));
                         });

TEST(W8A8Linear, MatchesTheFloat64ProductOfWhatItQuantized) {
  const LinearCase c(48, 320, 41);
  const int64_t rows = 6;
  const auto x = random_floats(static_cast<size_t>(rows * c.in), 42);
  const auto y = run(c, x, rows);
  double err = 0, energy = 0, exact_err = 0;
  std::vector<int8_t> qx(static_cast<size_t>(c.in + 64));
  for (int64_t t = 0; t < rows; ++t) {
    const float sx = quantize_activation_row(x.data() + t * c.in, c.in, c.in, qx.data());
    for (int64_t o = 0; o < c.out; ++o) {
      double quantized = 0, original = 0;
      for (int64_t k = 0; k < c.in; ++k) {
        quantized += static_cast<double>(c.q[o * c.in + k]) * qx[k];
        original += static_cast<double>(c.weight[o * c.in + k]) * x[t * c.in + k];
      }
      quantized = quantized * sx * c.scales[o] + c.bias[o];
      original += c.bias[o];
      const double got = y[t * c.out + o];
      // The only f32 roundings are the epilogue's: a few ulps of the sum.
      exact_err = std::max(exact_err, std::fabs(got - quantized) / (std::fabs(quantized) + 1e-3));
      err += (got - original) * (got - original);
      energy += original * original;
    }
  }
  EXPECT_LT(exact_err, 1e-5);
  // Two 8-bit roundings (weights per row, activations per token): under 1% of the output's energy.
  EXPECT_LT(err / energy, 1e-2);
}

// Two activation terms: the second quantizes what the first left out, and
// the output is both products' sum, exactly as the formula in
// w8a8_linear.hpp reads (up to the epilogue's f32 roundings); nearer the
// float product than one term.
TEST(W8A8Linear, TwoActivationTermsSumBothProductsAndFollowTheFloatProductCloser) {
  const LinearCase c(48, 320, 43);
  const int64_t rows = 6;
  const auto x = random_floats(static_cast<size_t>(rows * c.in), 44);
  const auto one = run(c, x, rows, false), two = run(c, x, rows, true);
  double err_one = 0, err_two = 0, energy = 0, exact_err = 0;
  std::vector<int8_t> q1(static_cast<size_t>(c.in)), q2(static_cast<size_t>(c.in));
  std::vector<float> rest(static_cast<size_t>(c.in));
  for (int64_t t = 0; t < rows; ++t) {
    const float* xt = x.data() + t * c.in;
    const float s1 = quantize_activation_row(xt, c.in, c.in, q1.data());
    for (int64_t k = 0; k < c.in; ++k) rest[k] = xt[k] - s1 * q1[k];
    const float s2 = quantize_activation_row(rest.data(), c.in, c.in, q2.data());
    ASSERT_GT(s2, 0.0f);
    EXPECT_LT(s2, s1 / 100) << "the second term's scale is the first's rounding step's";
    for (int64_t o = 0; o < c.out; ++o) {
      double d1 = 0, d2 = 0, original = c.bias[o];
      for (int64_t k = 0; k < c.in; ++k) {
        d1 += static_cast<double>(c.q[o * c.in + k]) * q1[k];
        d2 += static_cast<double>(c.q[o * c.in + k]) * q2[k];
        original += static_cast<double>(c.weight[o * c.in + k]) * xt[k];
      }
      const double expected = d1 * s1 * c.scales[o] + d2 * s2 * c.scales[o] + c.bias[o];
      const double got = two[t * c.out + o];
      exact_err = std::max(exact_err, std::fabs(got - expected) / (std::fabs(expected) + 1e-3));
      err_two += (got - original) * (got - original);
      err_one += (one[t * c.out + o] - original) * (one[t * c.out + o] - original);
      energy += original * original;
    }
  }
  EXPECT_LT(exact_err, 1e-5);
  EXPECT_LT(err_two, 0.5 * err_one) << "one term " << err_one / energy << ", two " << err_two / energy;
}

// A weight stored rotated (W·R) rotates each input row before quantizing
// it: the same bits as the plain Linear of W·R fed x·R, and an outlier
// channel in x costs far less than without the rotation.
TEST(W8A8Linear, RotatedWeightsRotateTheirInputsAndSpreadOutliers) {
  const int64_t out = 48, in = 256, rows = 6;
  const auto weight = random_floats(static_cast<size_t>(out * in), 45, 0.05f);
  auto x = random_floats(static_cast<size_t>(rows * in), 46);
  for (int64_t t = 0; t < rows; ++t) x[static_cast<size_t>(t * in + 17)] *= 60.0f;  // one outlier channel
  auto weight_rotated = weight, x_rotated = x;
  for (int64_t o = 0; o < out; ++o) rotate_row(weight_rotated.data() + o * in, in);
  for (int64_t t = 0; t < rows; ++t) rotate_row(x_rotated.data() + t * in, in);
  const auto quantized = [&](const std::vector<float>& w, bool rotated) {
    std::vector<int8_t> q(w.size());
    std::vector<float> scales(static_cast<size_t>(out));
    quantize_rows(w.data(), out, in, q.data(), scales.data());
    return W8A8Linear(pack_weight(q.data(), scales.data(), out, in), {}, false, rotated);
  };
  const auto forward = [&](W8A8Linear l, const std::vector<float>& input) {
    std::vector<float> y(static_cast<size_t>(rows * out));
    EXPECT_TRUE(l.forward(input.data(), y.data(), rows).ok());
    return y;
  };
  const auto rotated = forward(quantized(weight_rotated, true), x);
  EXPECT_EQ(rotated, forward(quantized(weight_rotated, false), x_rotated));
  // Two activation terms: the second quantizes what the first left of the rotated row.
  std::vector<int8_t> q(weight_rotated.size());
  std::vector<float> scales(static_cast<size_t>(out));
  quantize_rows(weight_rotated.data(), out, in, q.data(), scales.data());
  EXPECT_EQ(forward(W8A8Linear(pack_weight(q.data(), scales.data(), out, in), {}, true, true), x),
            forward(W8A8Linear(pack_weight(q.data(), scales.data(), out, in), {}, true, false), x_rotated));

  const auto plain = forward(quantized(weight, false), x);
  double err_plain = 0, err_rotated = 0, energy = 0;
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t o = 0; o < out; ++o) {
      double exact = 0;
      for (int64_t k = 0; k < in; ++k) exact += static_cast<double>(weight[o * in + k]) * x[t * in + k];
      const size_t i = static_cast<size_t>(t * out + o);
      err_plain += (plain[i] - exact) * (plain[i] - exact);
      err_rotated += (rotated[i] - exact) * (rotated[i] - exact);
      energy += exact * exact;
    }
  }
  EXPECT_LT(err_rotated, err_plain / 4) << "plain " << err_plain / energy << ", rotated " << err_rotated / energy;
}

TEST(W8A8Linear, ANonFiniteInputPoisonsOnlyItsRow) {
  const LinearCase c(16, 64, 51);
  auto x = random_floats(static_cast<size_t>(2 * c.in), 52);
  x[3] = std::numeric_limits<float>::infinity();
  const auto y = run(c, x, 2);
  for (int64_t o = 0; o < c.out; ++o) {
    EXPECT_TRUE(std::isnan(y[o]));
    EXPECT_TRUE(std::isfinite(y[c.out + o]));
  }
}

QuantizeSpec int8_spec() {
  QuantizeSpec s;
  s.method = "int8";
  s.format = "i8";
  s.bits = 8;
  s.group_size = -1;
  return s;
}

TEST(RowwiseQuantizer, RoundsEachRowAgainstItsOwnScale) {
  const int64_t out = 8, in = 96;
  auto w = random_floats(static_cast<size_t>(out * in), 61);
  for (int64_t k = 0; k < in; ++k) w[static_cast<size_t>(3 * in + k)] = 0.0f;  // an all-zero row
  auto q = make_rowwise_quantizer(int8_spec(), out, in);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_FALSE((*q)->wants_inputs());
  auto done = (*q)->quantize(w.data());
  ASSERT_TRUE(done.ok()) << done.status().message();
  EXPECT_EQ(done->dtype, DType::i8);
  EXPECT_EQ(done->format, "i8");
  ASSERT_EQ(done->data.size(), static_cast<size_t>(out * in));
  auto parts = (*q)->parts();
  ASSERT_TRUE(parts.ok());
  ASSERT_EQ(parts->size(), 1u);
  const QuantizedPart& scale = (*parts)[0];
  EXPECT_EQ(scale.suffix, "_scale");
  EXPECT_EQ(scale.shape, std::vector<int64_t>{out});
  ASSERT_EQ(scale.data.size(), static_cast<size_t>(out) * 4);
  std::vector<float> s(static_cast<size_t>(out));
  std::memcpy(s.data(), scale.data.data(), scale.data.size());
  const auto* v = reinterpret_cast<const int8_t*>(done->data.data());
  double err = 0, energy = 0;
  for (int64_t o = 0; o < out; ++o) {
    float amax = 0;
    for (int64_t k = 0; k < in; ++k) amax = std::max(amax, std::fabs(w[o * in + k]));
    EXPECT_EQ(s[o], amax / 127.0f);
    bool reaches_127 = o == 3;
    for (int64_t k = 0; k < in; ++k) {
      const float d = w[o * in + k] - s[o] * v[o * in + k];
      EXPECT_LE(std::fabs(d), s[o] * 0.5f * 1.0001f + 1e-12f);
      reaches_127 = reaches_127 || std::abs(v[o * in + k]) == 127;
      err += static_cast<double>(d) * d;
      energy += static_cast<double>(w[o * in + k]) * w[o * in + k];
    }
    EXPECT_TRUE(reaches_127) << "row " << o << ": its largest weight maps to +-127";
  }
  EXPECT_NEAR(done->relative_error, err / energy, 1e-9);
  EXPECT_EQ(done->rounding_relative_error, done->relative_error);
}

// round_to_even_small against std::nearbyint (ties to even under the
// default rounding mode) over the range the quantizer feeds it: every
// half-integer tie in [-130, 130], values a float's spacing either side of
// them, and quotients of tiny weights by tiny scales.
TEST(RowwiseQuantizer, RoundsLikeNearbyintAtTiesAndTinyScales) {
  for (int twice = -260; twice <= 260; ++twice) {
    const float v = 0.5f * static_cast<float>(twice);
    for (const float x : {v, std::nextafter(v, -1000.0f), std::nextafter(v, 1000.0f)})
      EXPECT_EQ(round_to_even_small(x), std::nearbyint(x)) << x;
  }
  const std::vector<float> w = {1e-30f, -3e-30f, 2.5e-38f, 127e-38f, -63.5e-38f};
  const float scale = 1e-38f;
  for (const float x : w) {
    const float q = x / scale;
    if (std::fabs(q) <= 4194304.0f) {
      EXPECT_EQ(round_to_even_small(q), std::nearbyint(q)) << x;
    }
  }
  EXPECT_EQ(round_to_even_small(0.5f), 0.0f);
  EXPECT_EQ(round_to_even_small(1.5f), 2.0f);
  EXPECT_EQ(round_to_even_small(-2.5f), -2.0f);
}

// Rows are quantized and their errors summed in parallel, then added in row
// order: one thread and four give the same bytes, scales and error.
TEST(RowwiseQuantizer, SameBytesAndErrorOnAnyNumberOfThreads) {
  const int64_t out = 300, in = 576;  // past kParallelWeightValues: the loops fork
  ASSERT_GE(out * in, kParallelWeightValues);
  const auto w = random_floats(static_cast<size_t>(out * in), 17, 0.02f);
  auto run = [&](int threads) {
    omp_set_num_threads(threads);
    auto q = make_rowwise_quantizer(int8_spec(), out, in);
    EXPECT_TRUE(q.ok());
    auto done = (*q)->quantize(w.data());
    EXPECT_TRUE(done.ok());
    auto parts = (*q)->parts();
    EXPECT_TRUE(parts.ok() && parts->size() == 1);
    return std::make_tuple(done->data, (*parts)[0].data, done->relative_error);
  };
  const int before = omp_get_max_threads();
  const auto one = run(1);
  const auto four = run(4);
  omp_set_num_threads(before);
  EXPECT_TRUE(std::get<0>(one) == std::get<0>(four)) << "the int8 values differ";
  EXPECT_TRUE(std::get<1>(one) == std::get<1>(four)) << "the row scales differ";
  EXPECT_EQ(std::get<2>(one), std::get<2>(four));
}

TEST(RowwiseQuantizer, RefusesWhatItCannotWrite) {
  auto expect_refused = [](QuantizeSpec s, const char* why) {
    auto q = make_rowwise_quantizer(s, 16, 64);
    EXPECT_FALSE(q.ok()) << why;
  };
  QuantizeSpec s = int8_spec();
  s.bits = 4;
  expect_refused(s, "4 bits");
  s = int8_spec();
  s.group_size = 32;
  expect_refused(s, "groups");
  s = int8_spec();
  s.symmetric = false;
  expect_refused(s, "asymmetric");
  s = int8_spec();
  s.method = "gptq";
  expect_refused(s, "another method");
  s = int8_spec();
  s.format = "ggml.q8_0";
  expect_refused(s, "another format");
  EXPECT_FALSE(make_rowwise_quantizer(int8_spec(), 16, kMaxInFeatures + 1).ok());
  auto q = make_rowwise_quantizer(int8_spec(), 2, 2);
  ASSERT_TRUE(q.ok());
  EXPECT_FALSE((*q)->parts().ok()) << "parts before quantize";
  const float nan[] = {1.0f, std::numeric_limits<float>::quiet_NaN(), 0.0f, 1.0f};
  EXPECT_FALSE((*q)->quantize(nan).ok());
}

// The built plugin, loaded the way the core loads it.
class Int8PluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::filesystem::path path = std::filesystem::path(TESSERA_PLUGIN_BUILD_DIR) / "libtessera_quant_int8.so";
    ASSERT_TRUE(std::filesystem::exists(path)) << "plugin not built at " << path;
    lib_ = std::make_unique<boost::dll::shared_library>(path.string());
    auto entry = lib_->get_alias<PluginEntryFn>("tessera_plugin_entry");
    const PluginLibrary* library = entry();
    ASSERT_EQ(library->abi_major, kAbiMajor);
    ASSERT_EQ(library->plugin_count, 1u);
    std::string error;
    PluginObject* obj = library->plugins[0].create(ParamValues{}, &error);
    ASSERT_NE(obj, nullptr) << error;
    quantizer_.reset(static_cast<Quantizer*>(obj));
  }
  void TearDown() override { quantizer_.reset(); }

  std::unique_ptr<boost::dll::shared_library> lib_;
  std::unique_ptr<Quantizer> quantizer_;
};

TensorRef ref(const std::string& name, DType type, std::vector<int64_t> shape, const void* data, uint64_t nbytes) {
  TensorRef t;
  t.name = name;
  t.dtype = type;
  t.format = std::string(dtype_name(type));
  t.ndim = static_cast<int32_t>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) t.shape[i] = shape[i];
  t.data = data;
  t.nbytes = nbytes;
  return t;
}

TEST_F(Int8PluginTest, RunsWeightsStoredWithTheirScales) {
  ASSERT_TRUE(provides(*quantizer_, 4));
  const auto formats = quantizer_->formats();
  ASSERT_EQ(formats.size(), 1u);
  EXPECT_EQ(formats[0], "i8");
  const auto suffixes = quantizer_->part_suffixes("i8");
  ASSERT_EQ(suffixes.size(), 2u);
  EXPECT_EQ(suffixes[0], "_scale");
  EXPECT_EQ(suffixes[1], "_hadamard_scale");
  ASSERT_TRUE(provides(*quantizer_, 8));
  EXPECT_TRUE(quantizer_->part_optional("i8", 0));
  EXPECT_TRUE(quantizer_->part_optional("i8", 1));
  EXPECT_TRUE(quantizer_->part_suffixes("f32").empty());

  const LinearCase c(20, 64, 71);
  const TensorRef w = ref("blk.0.ffn_up.weight", DType::i8, {c.out, c.in}, c.q.data(), c.q.size());
  const TensorRef s = ref("blk.0.ffn_up.weight_scale", DType::f32, {c.out}, c.scales.data(), c.scales.size() * 4);
  const TensorRef* parts[] = {&s};

  auto alone = quantizer_->make_linear(w, nullptr);
  ASSERT_FALSE(alone.ok());
  EXPECT_NE(alone.status().message().find("blk.0.ffn_up.weight_scale"), std::string::npos) << alone.status().message();

  auto linear = quantizer_->make_linear_from_parts(w, parts, nullptr);
  ASSERT_TRUE(linear.ok()) << linear.status().message();
  EXPECT_EQ((*linear)->in_features(), c.in);
  EXPECT_EQ((*linear)->out_features(), c.out);
  const auto x = random_floats(static_cast<size_t>(c.in), 72);
  std::vector<float> y(static_cast<size_t>(c.out));
  ASSERT_TRUE((*linear)->forward(x.data(), y.data(), 1).ok());
  LinearCase no_bias = c;
  no_bias.bias.clear();
  EXPECT_EQ(y, run(no_bias, x, 1));

  std::vector<float> rows(static_cast<size_t>(2 * c.in));
  ASSERT_TRUE(quantizer_->dequantize_rows_from_parts(w, parts, 3, 2, rows.data()).ok());
  for (int64_t k = 0; k < c.in; ++k) EXPECT_EQ(rows[k], c.scales[3] * c.q[3 * c.in + k]);
  EXPECT_FALSE(quantizer_->dequantize_rows_from_parts(w, parts, 19, 2, rows.data()).ok());
  EXPECT_FALSE(quantizer_->dequantize_rows(w, 0, 1, rows.data()).ok());

  // Scales of the wrong length, type or value; a weight of the wrong shape.
  const TensorRef short_scale = ref("s", DType::f32, {c.out - 1}, c.scales.data(), (c.scales.size() - 1) * 4);
  const TensorRef* short_parts[] = {&short_scale};
  EXPECT_FALSE(quantizer_->make_linear_from_parts(w, short_parts, nullptr).ok());
  const TensorRef int_scale = ref("s", DType::i8, {c.out}, c.q.data(), static_cast<uint64_t>(c.out));
  const TensorRef* int_parts[] = {&int_scale};
  EXPECT_FALSE(quantizer_->make_linear_from_parts(w, int_parts, nullptr).ok());
  std::vector<float> negative = c.scales;
  negative[5] = -1.0f;
  const TensorRef neg_scale = ref("s", DType::f32, {c.out}, negative.data(), negative.size() * 4);
  const TensorRef* neg_parts[] = {&neg_scale};
  EXPECT_FALSE(quantizer_->make_linear_from_parts(w, neg_parts, nullptr).ok());
  std::vector<int8_t> with_min = c.q;
  with_min[7] = -128;
  const TensorRef asymmetric = ref("w", DType::i8, {c.out, c.in}, with_min.data(), with_min.size());
  auto refused = quantizer_->make_linear_from_parts(asymmetric, parts, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("-128"), std::string::npos) << refused.status().message();
  const TensorRef flat = ref("w", DType::i8, {c.out * c.in}, c.q.data(), c.q.size());
  EXPECT_FALSE(quantizer_->make_linear_from_parts(flat, parts, nullptr).ok());
  const TensorRef* no_parts[] = {nullptr, nullptr};
  EXPECT_FALSE(quantizer_->make_linear_from_parts(w, std::span<const TensorRef* const>(no_parts, 0), nullptr).ok());
  auto without_scales = quantizer_->make_linear_from_parts(w, no_parts, nullptr);
  ASSERT_FALSE(without_scales.ok());
  EXPECT_EQ(without_scales.status().code(), StatusCode::corrupt_data) << "a file without the scales is damaged";
  EXPECT_NE(without_scales.status().message().find("blk.0.ffn_up.weight_scale"), std::string::npos)
      << without_scales.status().message();
}

// Rows stored rotated, their scales under "_hadamard_scale": the Linear
// rotates its inputs, dequantized rows come back in the input's basis, and a
// weight with both kinds of scales is refused.
TEST_F(Int8PluginTest, RunsRotatedWeightsAndDecodesThemUnrotated) {
  const int64_t out = 20, in = 64;
  const auto weight = random_floats(static_cast<size_t>(out * in), 73, 0.05f);
  QuantizeSpec spec = int8_spec();
  spec.rotate_inputs = true;
  auto wq = quantizer_->weight_quantizer(spec, out, in);
  ASSERT_TRUE(wq.ok()) << wq.status().message();
  auto q = (*wq)->quantize(weight.data());
  ASSERT_TRUE(q.ok()) << q.status().message();
  auto parts = (*wq)->parts();
  ASSERT_TRUE(parts.ok());
  ASSERT_EQ(parts->size(), 1u);
  EXPECT_EQ((*parts)[0].suffix, "_hadamard_scale");

  const TensorRef w = ref("blk.0.ffn_up.weight", DType::i8, {out, in}, q->data.data(), q->data.size());
  const TensorRef s = ref("blk.0.ffn_up.weight_hadamard_scale", DType::f32, {out}, (*parts)[0].data.data(),
                          (*parts)[0].data.size());
  const TensorRef* rotated_parts[] = {nullptr, &s};
  auto linear = quantizer_->make_linear_from_parts(w, rotated_parts, nullptr);
  ASSERT_TRUE(linear.ok()) << linear.status().message();
  const auto x = random_floats(static_cast<size_t>(in), 74);
  std::vector<float> y(static_cast<size_t>(out));
  ASSERT_TRUE((*linear)->forward(x.data(), y.data(), 1).ok());
  double err = 0, energy = 0;
  for (int64_t o = 0; o < out; ++o) {
    double exact = 0;
    for (int64_t k = 0; k < in; ++k) exact += static_cast<double>(weight[o * in + k]) * x[k];
    err += (y[o] - exact) * (y[o] - exact);
    energy += exact * exact;
  }
  EXPECT_LT(err / energy, 1e-3) << "the rotated Linear is not x·Wᵀ";

  std::vector<float> rows(static_cast<size_t>(out * in));
  ASSERT_TRUE(quantizer_->dequantize_rows_from_parts(w, rotated_parts, 0, out, rows.data()).ok());
  for (int64_t o = 0; o < out; ++o) {
    float scale;
    std::memcpy(&scale, (*parts)[0].data.data() + 4 * o, 4);
    // Half a step per value in the rotated basis, at most sqrt(in) half-steps in any one value back here.
    for (int64_t k = 0; k < in; ++k)
      EXPECT_NEAR(rows[o * in + k], weight[o * in + k], 0.5 * scale * std::sqrt(static_cast<double>(in)) + 1e-7)
          << o << ", " << k;
  }

  const TensorRef plain = ref("blk.0.ffn_up.weight_scale", DType::f32, {out}, (*parts)[0].data.data(),
                              (*parts)[0].data.size());
  const TensorRef* both[] = {&plain, &s};
  auto refused = quantizer_->make_linear_from_parts(w, both, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("either plain or rotated"), std::string::npos)
      << refused.status().message();
}

}  // namespace
}  // namespace tessera::int8
