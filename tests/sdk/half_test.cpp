// tessera/half.hpp: the bulk f16 conversions (F16C where the CPU has it) give
// exactly the bits of the scalar conversions, for every f16 value and for f32
// values around every rounding boundary, NaN, infinities and subnormals.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "tessera/half.hpp"

namespace tessera {
namespace {

TEST(Half, BulkWideningMatchesTheScalarConversionForEveryF16) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<float> bulk(all.size());
  f16_to_f32_n(all.data(), bulk.data(), static_cast<int64_t>(all.size()));
  for (uint32_t i = 0; i < all.size(); ++i) {
    const float want = f16_to_f32(all[i]);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(bulk[i])) << i;
    } else {
      EXPECT_EQ(std::bit_cast<uint32_t>(bulk[i]), std::bit_cast<uint32_t>(want)) << i;
    }
  }
}

TEST(Half, BulkNarrowingRoundsToNearestEvenLikeTheScalarConversion) {
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
  f32_to_f16_n(x.data(), bulk.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const uint16_t want = f32_to_f16(x[i]);
    if (std::isnan(x[i])) {
      EXPECT_TRUE((bulk[i] & 0x7c00u) == 0x7c00u && (bulk[i] & 0x3ffu) != 0) << "NaN stays NaN";
    } else {
      EXPECT_EQ(bulk[i], want) << "value " << x[i];
    }
  }
}

}  // namespace
}  // namespace tessera
