// RoPE unit tests: frequencies against hand-computed values, rotations against
// hand-rotated vectors, and the table's growth.
#include <gtest/gtest.h>

#include <cmath>

#include "tessera/blocks/rope.hpp"

namespace tessera::blocks {
namespace {

RopeConfig base_config() {
  RopeConfig c;
  c.head_dim = 8;
  c.freq_base = 10000.0;
  return c;
}

// head_dim 8, base 10000: freq_i = 10000^(-i/4) = 1, 0.1, 0.01, 0.001.
TEST(RopeFrequencies, Unscaled) {
  const auto f = rope_frequencies(base_config());
  ASSERT_EQ(f.size(), 4u);
  EXPECT_DOUBLE_EQ(f[0], 1.0);
  EXPECT_NEAR(f[1], 0.1, 1e-15);
  EXPECT_NEAR(f[2], 0.01, 1e-16);
  EXPECT_NEAR(f[3], 0.001, 1e-17);
}

TEST(RopeFrequencies, LinearDividesByFactor) {
  RopeConfig c = base_config();
  c.scaling = RopeScaling::linear;
  c.scaling_factor = 4.0;
  const auto f = rope_frequencies(c);
  EXPECT_NEAR(f[0], 0.25, 1e-15);
  EXPECT_NEAR(f[1], 0.025, 1e-15);
  EXPECT_NEAR(f[2], 0.0025, 1e-16);
  EXPECT_NEAR(f[3], 0.00025, 1e-17);
}

// llama3 with factor 8, low 1, high 4, original context 64: wavelengths below
// 64/4 = 16 keep their frequency, above 64/1 = 64 are divided by 8, between blend.
//   pair 0: wavelength 2*pi      = 6.28  < 16 -> 1
//   pair 1: wavelength 20*pi     = 62.83 in [16, 64]:
//           smooth = (64 / 62.8319 - 1) / (4 - 1) = 0.0061972
//           freq   = (1 - 0.0061972) * 0.1 / 8 + 0.0061972 * 0.1 = 0.0130423
//   pair 2: wavelength 200*pi    = 628.3 > 64 -> 0.01 / 8 = 0.00125
//   pair 3: wavelength 2000*pi   > 64         -> 0.001 / 8 = 0.000125
TEST(RopeFrequencies, Llama3KeepsBlendsAndScales) {
  RopeConfig c = base_config();
  c.scaling = RopeScaling::llama3;
  c.scaling_factor = 8.0;
  c.low_freq_factor = 1.0;
  c.high_freq_factor = 4.0;
  c.original_context = 64;
  const auto f = rope_frequencies(c);
  EXPECT_DOUBLE_EQ(f[0], 1.0);
  EXPECT_NEAR(f[1], 0.0130423, 1e-7);
  EXPECT_NEAR(f[2], 0.00125, 1e-15);
  EXPECT_NEAR(f[3], 0.000125, 1e-16);
}

TEST(RopeValidation, RejectsWhatItCannotServe) {
  RopeConfig c = base_config();
  EXPECT_EQ(validate_rope(c), "");
  c.head_dim = 7;
  EXPECT_NE(validate_rope(c).find("even head_dim"), std::string::npos);
  c = base_config();
  c.scaling = RopeScaling::yarn;
  EXPECT_NE(validate_rope(c).find("YaRN"), std::string::npos);
  c = base_config();
  c.scaling = RopeScaling::llama3;
  c.scaling_factor = 8.0;
  c.original_context = 0;
  EXPECT_NE(validate_rope(c).find("original context"), std::string::npos);
  c.original_context = 8192;
  c.low_freq_factor = 4.0;
  c.high_freq_factor = 1.0;
  EXPECT_NE(validate_rope(c).find("low_freq_factor"), std::string::npos);
}

// head_dim 4, base 10000: freqs 1 and 0.01. At position 1, the unit vector e0
// turns by 1 radian within its pair: (0, 1) for adjacent, (0, 2) for neox.
TEST(RopeTable, RotatesTheRightPairs) {
  RopeConfig c;
  c.head_dim = 4;
  c.freq_base = 10000.0;
  for (RopeStyle style : {RopeStyle::adjacent, RopeStyle::neox}) {
    c.style = style;
    RopeTable table(c, 16);
    table.ensure(2);
    float x[8] = {1, 0, 0, 0, 0, 0, 0, 1};  // two heads: e0 and e3
    table.apply(x, 2, 1);
    const int partner0 = style == RopeStyle::adjacent ? 1 : 2;
    EXPECT_NEAR(x[0], std::cos(1.0), 1e-6);
    EXPECT_NEAR(x[partner0], std::sin(1.0), 1e-6);
    // e3 is the second member of pair 1: (2, 3) adjacent, (1, 3) neox; angle 0.01.
    const int partner3 = style == RopeStyle::adjacent ? 2 : 1;
    EXPECT_NEAR(x[4 + partner3], -std::sin(0.01), 1e-6);
    EXPECT_NEAR(x[4 + 3], std::cos(0.01), 1e-6);
  }
}

TEST(RopeTable, PositionZeroIsIdentityAndTableGrows) {
  RopeConfig c = base_config();
  RopeTable table(c, 1000);
  table.ensure(3);
  EXPECT_GE(table.n_positions(), 3);
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  table.apply(x, 1, 0);
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(x[i], static_cast<float>(i + 1));

  table.ensure(700);
  EXPECT_GE(table.n_positions(), 700);
  table.ensure(5000);  // capped at the maximum
  EXPECT_EQ(table.n_positions(), 1000);
  float y[8] = {1, 0, 0, 0, 0, 0, 0, 0};
  table.apply(y, 1, 999);
  EXPECT_NEAR(y[0], std::cos(999.0), 1e-5);
  EXPECT_NEAR(y[1], std::sin(999.0), 1e-5);
}

}  // namespace
}  // namespace tessera::blocks
