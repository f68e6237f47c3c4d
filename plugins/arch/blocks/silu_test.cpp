// SiLU gate: the vectorized double-precision exp against std::exp, argument by
// argument, and silu_mul against the plain float formula it replaces.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "tessera/blocks/elementwise.hpp"
#include "tessera/blocks/silu.hpp"
#include "tessera/isa.hpp"

namespace tessera::blocks {

// The kernel's variants (silu.cpp picks one of them).
TESSERA_ISA_DECLARE(void silu_mul_kernel(float* gate, const float* up, int64_t n))

namespace {

float plain_silu_mul(float g, float u) { return g / (1.0f + std::exp(-g)) * u; }

uint32_t bits(float x) {
  uint32_t b = 0;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// Floats apart by whole ulps (same sign), for "at most 1 ulp".
int64_t ulps_apart(float a, float b) {
  return std::abs(static_cast<int64_t>(bits(a)) - static_cast<int64_t>(bits(b)));
}

TEST(SiluExp, RoundsToWhatExpfGivesOverTheFloatRange) {
  // Every 1009th float of magnitude <= 110 (about 2 million arguments, both
  // signs; beyond, expf is 0 or inf). Allowed: 1-ulp differences in at most
  // 1 argument of 10000 (measured: 3 in 100000), where expf itself is not
  // correctly rounded or the result sits within 1e-14 of a rounding boundary.
  int64_t total = 0, differ = 0;
  for (uint64_t b = 0; b <= 0xFFFFFFFFu; b += 1009) {
    float x = 0.0f;
    const auto b32 = static_cast<uint32_t>(b);
    std::memcpy(&x, &b32, sizeof x);
    if (!(std::fabs(x) <= 110.0f)) continue;
    const float ours = static_cast<float>(exp_for_float(x));
    const float libm = std::exp(x);
    ++total;
    if (bits(ours) != bits(libm)) {
      ++differ;
      ASSERT_LE(ulps_apart(ours, libm), 1) << "x = " << x << ": " << ours << " vs " << libm;
    }
  }
  EXPECT_GT(total, 1000000);
  EXPECT_LE(differ * 10000, total) << differ << " of " << total << " differ by 1 ulp";
}

TEST(SiluExp, EdgesMatchExpf) {
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {0.0f, -0.0f, 1.0f, -1.0f, 88.72f, 88.73f, 100.0f, 1e30f, inf, -87.0f, -103.0f, -104.0f, -150.0f,
                  -1e30f, -inf}) {
    EXPECT_EQ(static_cast<float>(exp_for_float(x)), std::exp(x)) << "x = " << x;
  }
  EXPECT_TRUE(std::isnan(exp_for_float(std::nan(""))));
}

using SiluKernel = void (*)(float*, const float*, int64_t);
constexpr SiluKernel kSiluLevels[kIsaLevelCount] = TESSERA_ISA_TABLE(silu_mul_kernel);

// Every instruction-set level the CPU runs (tessera/isa.hpp), not only the
// best one silu_mul() picks.
class SiluLevel : public ::testing::TestWithParam<int> {};

TEST_P(SiluLevel, MatchesThePlainFormulaIncludingTailsAndSpecialValues) {
  const auto level = static_cast<IsaLevel>(GetParam());
  if (!cpu_supports(level)) GTEST_SKIP() << "this CPU lacks " << isa_level_name(level);
  const SiluKernel kernel = isa_select(kSiluLevels, level);  // amx: avx512_vnni's variant
  ASSERT_NE(kernel, nullptr) << isa_level_name(level) << " is not compiled on this platform";
  // 1000 gates (vector bodies and a tail) over the range activations take,
  // plus the values where the formula's special cases show.
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> gate, up;
  for (int i = 0; i < 1000; ++i) {
    gate.push_back(-30.0f + 60.0f * static_cast<float>(i) / 999.0f);
    up.push_back(0.5f + static_cast<float>(i % 7));
  }
  for (float g : {0.0f, -0.0f, 90.0f, -90.0f, 200.0f, -200.0f, inf, -inf, std::nanf("")}) {
    gate.push_back(g);
    up.push_back(1.5f);
  }
  std::vector<float> expected(gate.size());
  for (size_t i = 0; i < gate.size(); ++i) expected[i] = plain_silu_mul(gate[i], up[i]);
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{15}, static_cast<int64_t>(gate.size())}) {
    std::vector<float> g(gate.begin(), gate.begin() + n);
    kernel(g.data(), up.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const auto k = static_cast<size_t>(i);
      if (std::isnan(expected[k])) {
        EXPECT_TRUE(std::isnan(g[k])) << "gate " << gate[k];
      } else {
        EXPECT_LE(ulps_apart(g[k], expected[k]), 1) << "gate " << gate[k] << ": " << g[k] << " vs " << expected[k];
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, SiluLevel, ::testing::Range(0, TESSERA_ISA_X86 ? kIsaLevelCount : 1),
                         [](const auto& info) { return std::string(isa_level_name(static_cast<IsaLevel>(info.param))); });

TEST(SiluMul, SwigluOverABatchSplitsAcrossThreadsLikeOneCall) {
  // 8 rows x 1536 (a decode batch of SmolLM2-135M) takes the parallel path.
  std::vector<float> gate(8 * 1536), up(gate.size());
  for (size_t i = 0; i < gate.size(); ++i) {
    gate[i] = std::sin(static_cast<float>(i)) * 8.0f;
    up[i] = std::cos(static_cast<float>(i));
  }
  std::vector<float> one_call = gate, batched = gate;
  silu_mul(one_call.data(), up.data(), static_cast<int64_t>(one_call.size()));
  swiglu_inplace(batched.data(), up.data(), static_cast<int64_t>(batched.size()));
  EXPECT_EQ(batched, one_call);
}

}  // namespace
}  // namespace tessera::blocks
