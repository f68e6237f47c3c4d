// tessera/half.hpp: the bulk f16 conversions, portable and F16C (where the
// CPU has it), give exactly the bits of the scalar conversions, for every f16
// value and for f32 values around every rounding boundary, NaN, infinities
// and subnormals.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "half_f16c_kernels.hpp"
#include "tessera/half.hpp"
#include "tessera/isa.hpp"

namespace tessera {
namespace {

using Widen = void (*)(const uint16_t*, float*, int64_t);
using Narrow = void (*)(const float*, uint16_t*, int64_t);

// The portable bulk conversions, and F16C's where the CPU has it.
class HalfBulk : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam() && !cpu_supports(IsaLevel::avx2)) GTEST_SKIP() << "this CPU lacks F16C (the avx2 level)";
  }
  Widen widen() const { return GetParam() ? &test::f16c_widen : &f16_to_f32_n; }
  Narrow narrow() const { return GetParam() ? &test::f16c_narrow : &f32_to_f16_n; }
};

TEST_P(HalfBulk, WideningMatchesTheScalarConversionForEveryF16) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<float> bulk(all.size());
  widen()(all.data(), bulk.data(), static_cast<int64_t>(all.size()));
  for (uint32_t i = 0; i < all.size(); ++i) {
    const float want = f16_to_f32(all[i]);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(bulk[i])) << i;
    } else {
      EXPECT_EQ(std::bit_cast<uint32_t>(bulk[i]), std::bit_cast<uint32_t>(want)) << i;
    }
  }
}

TEST_P(HalfBulk, NarrowingRoundsToNearestEvenLikeTheScalarConversion) {
  std::vector<float> x;
  // Every f16 value, the midpoints to its neighbours and one f32 ulp either side.
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const float a = f16_to_f32(static_cast<uint16_t>(h));
    const float b = f16_to_f32(static_cast<uint16_t>(h + 1));
    const float mid = a + (b - a) / 2;
    for (float v : {a, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) {
      x.push_back(v);
      x.push_back(-v);
    }
  }
  for (float v : {65504.0f, 65520.0f, 1e9f, std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN(), 1e-10f, 5.9604645e-8f, 2.9802322e-8f}) {
    x.push_back(v);
    x.push_back(-v);
  }
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> any(-70000.0f, 70000.0f);
  for (int i = 0; i < 100000; ++i) x.push_back(any(rng));
  x.push_back(1.0f);  // an odd count leaves a scalar tail after the vector loop

  std::vector<uint16_t> bulk(x.size());
  narrow()(x.data(), bulk.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const uint16_t want = f32_to_f16(x[i]);
    if (std::isnan(x[i])) {
      EXPECT_TRUE((bulk[i] & 0x7c00u) == 0x7c00u && (bulk[i] & 0x3ffu) != 0) << "NaN stays NaN";
    } else {
      EXPECT_EQ(bulk[i], want) << "value " << x[i];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, HalfBulk, ::testing::Bool(),
                         [](const auto& info) { return std::string(info.param ? "f16c" : "portable"); });

}  // namespace
}  // namespace tessera
