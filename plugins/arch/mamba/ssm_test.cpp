// The recurrent pieces against a float64 transcription of the published
// equations (causal convolution over a zero-padded sequence, then the
// sequential scan), and their invariance to how a sequence's tokens arrive.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "ssm_kernels.hpp"
#include "ssm_testing.hpp"

namespace tessera::mamba {

namespace {

// One instruction-set level's kernels.
struct Kernels {
  using Conv = void (*)(Rows, MutableRows, int64_t, int64_t, int64_t, const float*, const float*, float*, int64_t,
                        int64_t);
  using Scan1 = void (*)(const Mamba1Scan&, int64_t, int64_t, int64_t);
  using Scan2 = void (*)(const Mamba2Scan&, int64_t, int64_t, int64_t);
  using Softplus = void (*)(float*, int64_t);
  Conv conv;
  Scan1 scan1;
  Scan2 scan2;
  Scan2 chunked2;  // n counts chunks of kSsdChunk tokens
  Softplus softplus;
  static Kernels at(IsaLevel level) {
    return {isa_select<Conv>(TESSERA_ISA_TABLE(causal_conv_silu_kernel), level),
            isa_select<Scan1>(TESSERA_ISA_TABLE(mamba1_scan_kernel), level),
            isa_select<Scan2>(TESSERA_ISA_TABLE(mamba2_scan_kernel), level),
            isa_select<Scan2>(TESSERA_ISA_TABLE(mamba2_chunked_scan_kernel), level),
            isa_select<Softplus>(TESSERA_ISA_TABLE(softplus_kernel), level)};
  }
};

// Every level's kernels against the float64 equations (FMA contraction at
// the wide levels changes the last bits, so not against each other).
class SsmLevel : public ::testing::TestWithParam<IsaLevel> {
 protected:
  void SetUp() override {
    if (!cpu_supports(GetParam()))
      GTEST_SKIP() << "this CPU lacks " << isa_level_name(GetParam()) << "; that level is tested where it runs";
  }
  Kernels kernels() const { return Kernels::at(GetParam()); }
};

using testing::random_values;

double silu64(double x) { return x / (1.0 + std::exp(-x)); }
double softplus64(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }

// max |a - b| / max |b|
double relative_error(const std::vector<float>& a, const std::vector<double>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return diff / scale;
}

// A Mamba-1 mixer's recurrent part over T tokens of one sequence.
struct Mamba1Case {
  // n: the state size (16 in real models; 13 and 19 leave tails to the vector loops).
  explicit Mamba1Case(int64_t n = 16) : N(n) {}
  int64_t T = 13, C = 24, N = 16, K = 4;
  std::vector<float> x = random_values(T * C, -2, 2, 1);        // conv input [T, C]
  std::vector<float> w = random_values(K * C, -0.5f, 0.5f, 2);  // [K, C] tap-major
  std::vector<float> bias = random_values(C, -0.2f, 0.2f, 3);
  std::vector<float> dt = random_values(T * C, -4, 1, 4);  // before softplus
  std::vector<float> z = random_values(T * C, -2, 2, 5);
  std::vector<float> bc = random_values(T * 2 * N, -1, 1, 6);  // [T, B | C]
  std::vector<float> a = random_values(C * N, -3, -0.05f, 7);
  std::vector<float> d = random_values(C, -1, 1, 8);

  // Tokens [t0, t1) with the given window and state, channels [c0, c1).
  void run(const Kernels& k, int64_t t0, int64_t t1, std::vector<float>& window, std::vector<float>& state,
           std::vector<float>& conv, std::vector<float>& y, int64_t c0, int64_t c1) const {
    const int64_t n = t1 - t0;
    k.conv({x.data() + t0 * C, C}, {conv.data() + t0 * C, C}, n, C, K, w.data(), bias.data(), window.data(), c0, c1);
    std::vector<float> delta(dt.begin() + t0 * C, dt.begin() + t1 * C);  // [n, C]
    k.softplus(delta.data(), n * C);
    Mamba1Scan s;
    s.x = {conv.data() + t0 * C, C};
    s.dt = {delta.data(), C};
    s.b = {bc.data() + t0 * 2 * N, 2 * N};
    s.c = {bc.data() + t0 * 2 * N + N, 2 * N};
    s.a = a.data();
    s.d = d.data();
    s.state = state.data();
    s.y = {y.data() + t0 * C, C};
    s.d_state = N;
    k.scan1(s, n, c0, c1);
  }

  std::vector<double> reference() const {
    std::vector<double> y(static_cast<size_t>(T * C));
    for (int64_t c = 0; c < C; ++c) {
      std::vector<double> h(static_cast<size_t>(N), 0.0);
      for (int64_t t = 0; t < T; ++t) {
        double acc = bias[c];
        for (int64_t k = 0; k < K; ++k) {
          const int64_t src = t - (K - 1) + k;
          if (src >= 0) acc += static_cast<double>(w[k * C + c]) * x[src * C + c];
        }
        const double u = silu64(acc);
        const double delta = softplus64(dt[t * C + c]);
        double out = 0;
        for (int64_t j = 0; j < N; ++j) {
          h[j] = std::exp(delta * a[c * N + j]) * h[j] + delta * bc[t * 2 * N + j] * u;
          out += h[j] * bc[t * 2 * N + N + j];
        }
        y[t * C + c] = (out + d[c] * u) * silu64(z[t * C + c]);
      }
    }
    return y;
  }
};

// State sizes: real models' 16, and 13 and 19, which leave tails to the vector loops.
constexpr int64_t kStateSizes[] = {16, 13, 19};

TEST_P(SsmLevel, Mamba1MatchesTheFloat64Equations) {
  for (int64_t n : kStateSizes) {
    const Mamba1Case m(n);
    std::vector<float> window((m.K - 1) * m.C, 0.0f), state(m.C * m.N, 0.0f), conv(m.T * m.C), y(m.T * m.C);
    m.run(kernels(), 0, m.T, window, state, conv, y, 0, m.C);
    std::vector<float> z = m.z;
    for (int64_t t = 0; t < m.T; ++t) gate_row(y.data() + t * m.C, z.data() + t * m.C, m.C);
    EXPECT_LT(relative_error(y, m.reference()), 2e-6) << "state size " << n;
  }
}

TEST_P(SsmLevel, Mamba1GivesTheSameBitsWhateverTheChunksAndChannelSlices) {
  const Mamba1Case m(19);
  const Kernels k = kernels();
  std::vector<float> w1((m.K - 1) * m.C, 0.0f), s1(m.C * m.N, 0.0f), conv1(m.T * m.C), y1(m.T * m.C);
  m.run(k, 0, m.T, w1, s1, conv1, y1, 0, m.C);
  // Token by token for one slice of channels, chunks of 5 for the rest.
  std::vector<float> w2((m.K - 1) * m.C, 0.0f), s2(m.C * m.N, 0.0f), conv2(m.T * m.C), y2(m.T * m.C);
  for (int64_t t = 0; t < m.T; ++t) m.run(k, t, t + 1, w2, s2, conv2, y2, 0, 7);
  for (int64_t t = 0; t < m.T; t += 5) m.run(k, t, std::min(m.T, t + 5), w2, s2, conv2, y2, 7, m.C);
  EXPECT_EQ(y1, y2);
  EXPECT_EQ(s1, s2);
  EXPECT_EQ(w1, w2);
}

// A Mamba-2 mixer's recurrent part: H heads of P channels, G groups.
struct Mamba2Case {
  // n: the state size, as Mamba1Case's; t: the tokens.
  explicit Mamba2Case(int64_t n = 16, int64_t t = 11) : T(t), N(n) {}
  int64_t T = 11, H = 4, P = 8, G = 2, N = 16;
  int64_t inner() const { return H * P; }
  std::vector<float> x = random_values(T * H * P, -2, 2, 11);
  std::vector<float> bc = random_values(T * 2 * G * N, -1, 1, 12);  // [T, B (G N) | C (G N)]
  std::vector<float> dt = random_values(T * H, -4, 1, 13);
  std::vector<float> dt_bias = random_values(H, -1, 1, 14);
  std::vector<float> a = random_values(H, -4, -0.1f, 15);
  std::vector<float> d = random_values(H, -1, 1, 16);
  double dt_min = 0.0, dt_max = std::numeric_limits<double>::infinity();  // time_step_limit

  // Tokens [t0, t1), heads [h0, h1); chunked: through the chunked form (t1 -
  // t0 a multiple of kSsdChunk).
  void run(const Kernels& k, int64_t t0, int64_t t1, std::vector<float>& state, std::vector<float>& y, int64_t h0,
           int64_t h1, bool chunked = false) const {
    Mamba2Scan s;
    s.dt_min = static_cast<float>(dt_min);
    s.dt_max = static_cast<float>(dt_max);
    s.x = {x.data() + t0 * inner(), inner()};
    s.b = {bc.data() + t0 * 2 * G * N, 2 * G * N};
    s.c = {bc.data() + t0 * 2 * G * N + G * N, 2 * G * N};
    s.dt_raw = {dt.data() + t0 * H, H};
    s.a = a.data();
    s.d = d.data();
    s.dt_bias = dt_bias.data();
    s.state = state.data();
    s.y = {y.data() + t0 * inner(), inner()};
    s.n_head = H;
    s.head_dim = P;
    s.n_group = G;
    s.d_state = N;
    if (chunked) {
      k.chunked2(s, (t1 - t0) / kSsdChunk, h0, h1);
    } else {
      k.scan2(s, t1 - t0, h0, h1);
    }
  }

  std::vector<double> reference() const {
    std::vector<double> y(static_cast<size_t>(T * inner()));
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / (H / G);
      std::vector<double> s(static_cast<size_t>(P * N), 0.0);
      for (int64_t t = 0; t < T; ++t) {
        const double delta = std::clamp(softplus64(static_cast<double>(dt[t * H + h]) + dt_bias[h]), dt_min, dt_max);
        const double decay = std::exp(delta * a[h]);
        for (int64_t p = 0; p < P; ++p) {
          const double u = x[t * inner() + h * P + p];
          double out = 0;
          for (int64_t j = 0; j < N; ++j) {
            double& v = s[p * N + j];
            v = decay * v + delta * u * bc[t * 2 * G * N + g * N + j];
            out += v * bc[t * 2 * G * N + G * N + g * N + j];
          }
          y[t * inner() + h * P + p] = out + d[h] * u;
        }
      }
    }
    return y;
  }
};

TEST_P(SsmLevel, Mamba2MatchesTheFloat64Equations) {
  for (int64_t n : kStateSizes) {
    const Mamba2Case m(n);
    std::vector<float> state(m.H * m.P * m.N, 0.0f), y(m.T * m.inner());
    m.run(kernels(), 0, m.T, state, y, 0, m.H);
    EXPECT_LT(relative_error(y, m.reference()), 2e-6) << "state size " << n;
  }
}

// Hugging Face's time_step_limit: dt clamped after softplus. The random dt
// (softplus values of about 0.01 to 2) reach past both ends of [0.1, 0.8].
TEST_P(SsmLevel, Mamba2ClampsTheTimeStepToItsLimit) {
  Mamba2Case m(16);
  m.dt_min = 0.1;
  m.dt_max = 0.8;
  std::vector<float> state(m.H * m.P * m.N, 0.0f), y(m.T * m.inner());
  m.run(kernels(), 0, m.T, state, y, 0, m.H);
  const std::vector<double> clamped = m.reference();
  EXPECT_LT(relative_error(y, clamped), 2e-6);
  m.dt_min = 0.0;
  m.dt_max = std::numeric_limits<double>::infinity();
  EXPECT_GT(relative_error(y, m.reference()), 1e-2) << "the limit changed nothing: widen the test's dt range";
}

TEST_P(SsmLevel, Mamba2GivesTheSameBitsWhateverTheChunksAndHeadSlices) {
  const Mamba2Case m(19);
  const Kernels k = kernels();
  std::vector<float> s1(m.H * m.P * m.N, 0.0f), y1(m.T * m.inner());
  m.run(k, 0, m.T, s1, y1, 0, m.H);
  std::vector<float> s2(m.H * m.P * m.N, 0.0f), y2(m.T * m.inner());
  for (int64_t t = 0; t < m.T; ++t) m.run(k, t, t + 1, s2, y2, 0, 1);
  for (int64_t t = 0; t < m.T; t += 4) m.run(k, t, std::min(m.T, t + 4), s2, y2, 1, m.H);
  EXPECT_EQ(y1, y2);
  EXPECT_EQ(s1, s2);
}

// The chunked form over two chunks, then the scan over the rest, carrying
// the state between them: the equations' values within the scan's own
// tolerance, and the state the scan would have left.
TEST_P(SsmLevel, Mamba2ChunkedFormMatchesTheFloat64Equations) {
  for (int64_t n : kStateSizes) {
    const Mamba2Case m(n, 2 * kSsdChunk + 21);
    const Kernels k = kernels();
    std::vector<float> state(m.H * m.P * m.N, 0.0f), y(m.T * m.inner());
    m.run(k, 0, 2 * kSsdChunk, state, y, 0, m.H, /*chunked=*/true);
    m.run(k, 2 * kSsdChunk, m.T, state, y, 0, m.H);
    EXPECT_LT(relative_error(y, m.reference()), 2e-6) << "state size " << n;
    std::vector<float> scan_state(state.size(), 0.0f), scan_y(y.size());
    m.run(k, 0, m.T, scan_state, scan_y, 0, m.H);
    EXPECT_LT(relative_error(state, std::vector<double>(scan_state.begin(), scan_state.end())), 2e-6);
  }
}

// Strong decays (dt up to softplus(6) ~ 6, A down to -8: e^{cum} reaches
// e^-3000 within a chunk) underflow to zero without NaNs or infinities.
TEST_P(SsmLevel, Mamba2ChunkedFormSurvivesDecaysThatUnderflow) {
  Mamba2Case m(16, kSsdChunk);
  m.dt = random_values(m.T * m.H, 2, 5, 21);
  m.a = random_values(m.H, -8, -4, 22);
  std::vector<float> state(m.H * m.P * m.N, 0.0f), y(m.T * m.inner());
  m.run(kernels(), 0, m.T, state, y, 0, m.H, /*chunked=*/true);
  EXPECT_LT(relative_error(y, m.reference()), 2e-6);
  for (float v : state) ASSERT_TRUE(std::isfinite(v));
}

// The chunked form's bits depend on a chunk's inputs and the state before
// it only: not on the heads a call is given, nor on the chunks per call.
TEST_P(SsmLevel, Mamba2ChunkedFormGivesTheSameBitsWhateverTheCallsAndHeadSlices) {
  const Mamba2Case m(19, 3 * kSsdChunk);
  const Kernels k = kernels();
  std::vector<float> s1(m.H * m.P * m.N, 0.0f), y1(m.T * m.inner());
  m.run(k, 0, m.T, s1, y1, 0, m.H, true);
  std::vector<float> s2(m.H * m.P * m.N, 0.0f), y2(m.T * m.inner());
  for (int64_t t = 0; t < m.T; t += kSsdChunk) {
    m.run(k, t, t + kSsdChunk, s2, y2, 0, 1, true);  // group 0's first head alone
    m.run(k, t, t + kSsdChunk, s2, y2, 1, m.H, true);
  }
  EXPECT_EQ(y1, y2);
  EXPECT_EQ(s1, s2);
}

TEST(GatedGroupRmsNorm, GatesThenNormsEachGroupOnItsOwn) {
  const int64_t width = 12, groups = 3, g = width / groups;
  const std::vector<float> y0 = random_values(width, -3, 3, 21), z = random_values(width, -2, 2, 22),
                           w = random_values(width, 0.5f, 1.5f, 23);
  std::vector<float> y = y0, z_scratch = z;
  gated_group_rms_norm(y.data(), z_scratch.data(), w.data(), width, groups, 1e-5f);
  std::vector<double> ref(width);
  for (int64_t k = 0; k < groups; ++k) {
    double sq = 0;
    for (int64_t i = k * g; i < (k + 1) * g; ++i) {
      ref[i] = y0[i] * silu64(z[i]);
      sq += ref[i] * ref[i];
    }
    const double scale = 1.0 / std::sqrt(sq / g + 1e-5);
    for (int64_t i = k * g; i < (k + 1) * g; ++i) ref[i] *= scale * w[i];
  }
  EXPECT_LT(relative_error(y, ref), 1e-6);
}

// The float nearest to log1p(exp(x)) computed in float64, and how far `got`
// is from it in float ulps.
int64_t ulps_from_softplus64(float got, float x) {
  const auto want = static_cast<float>(softplus64(x));
  return std::abs(static_cast<int64_t>(std::bit_cast<int32_t>(got)) - std::bit_cast<int32_t>(want));
}

TEST(Softplus, FollowsLogOnePlusExpAndPassesLargeValues) {
  EXPECT_FLOAT_EQ(softplus(0.0f), std::log(2.0f));
  EXPECT_FLOAT_EQ(softplus(-30.0f), static_cast<float>(std::log1p(std::exp(-30.0))));
  EXPECT_EQ(softplus(25.0f), 25.0f);
  EXPECT_EQ(softplus(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(softplus(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(softplus(std::numeric_limits<float>::quiet_NaN())));
}

// Every level's vectorized softplus against float64 log1p(exp(x)) on a dense
// sweep of [-110, 30] (beyond -104 the result underflows to 0; 20 is the
// threshold above which x itself is returned): within one float ulp, and
// exactly equal for all but a handful of values.
TEST_P(SsmLevel, SoftplusIsWithinAnUlpOfFloat64) {
  std::vector<float> x;
  for (float v = -110.0f; v <= 30.0f; v += 0.00390625f) x.push_back(v);  // 2^-8 steps
  const std::vector<float> xs = random_values(20000, -25.0f, 25.0f, 31);
  x.insert(x.end(), xs.begin(), xs.end());
  std::vector<float> y = x;
  kernels().softplus(y.data(), static_cast<int64_t>(y.size()));
  int64_t off_by_one = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t ulps = ulps_from_softplus64(y[i], x[i]);
    ASSERT_LE(ulps, 1) << "softplus(" << x[i] << ") = " << y[i] << ", float64 gives " << softplus64(x[i]);
    off_by_one += ulps;
  }
  std::printf("%s: %lld of %zu values one float ulp from float64's, the rest equal\n",
              std::string(isa_level_name(GetParam())).c_str(), static_cast<long long>(off_by_one), x.size());
  EXPECT_LT(off_by_one, static_cast<int64_t>(x.size() / 1000));
}

INSTANTIATE_TEST_SUITE_P(Levels, SsmLevel,
                         ::testing::Values(IsaLevel::scalar, IsaLevel::avx2, IsaLevel::avx512, IsaLevel::avx512_vnni),
                         [](const auto& info) { return std::string(isa_level_name(info.param)); });

}  // namespace
}  // namespace tessera::mamba
