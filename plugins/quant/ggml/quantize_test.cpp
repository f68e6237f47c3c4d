// Quantize -> dequantize round trips stay within each format's error bound.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels.hpp"
#include "reference.hpp"
#include "ggml_testing.hpp"

namespace tessera::ggml {
namespace {

using testing::random_floats;

constexpr int64_t kN = 32 * 40;

// f16 keeps 11 significant bits: a stored scale is off by at most 2^-11 relative.
constexpr float kF16Rel = 1.0f / 2048.0f;

TEST(Quantize, Q4_0WithinOneStep) {
  const auto x = random_floats(kN, 1);
  std::vector<BlockQ4_0> q(kN / 32);
  std::vector<float> y(kN);
  quantize_row_q4_0(x.data(), q.data(), kN);
  dequantize_row_q4_0(q.data(), y.data(), kN);
  for (int64_t b = 0; b < kN / 32; ++b) {
    const float d = std::fabs(f16_to_f32(q[b].d));
    for (int j = 0; j < 32; ++j) {
      const int64_t i = b * 32 + j;
      // Half a step from rounding; a full step where the side opposite the
      // largest magnitude is clamped at +7 (ggml's asymmetric choice).
      EXPECT_LE(std::fabs(y[i] - x[i]), d * (1.0f + 8 * kF16Rel)) << i;
    }
  }
}

// Q5_0 and Q5_1 round trip: within the step of each block (half a step from
// rounding, a full one where Q5_0 clamps at +15 opposite the largest
// magnitude), and the 5-bit packing keeps every value (checked by a second
// round trip being exact).
TEST(Quantize, Q5_0AndQ5_1WithinOneStepAndStable) {
  const auto x = random_floats(kN, 5);
  std::vector<BlockQ5_0> q0(kN / 32), q0_again(kN / 32);
  std::vector<BlockQ5_1> q1(kN / 32);
  std::vector<float> y0(kN), y1(kN), y0_again(kN);
  quantize_row_q5_0(x.data(), q0.data(), kN);
  quantize_row_q5_1(x.data(), q1.data(), kN);
  dequantize_row_q5_0(q0.data(), y0.data(), kN);
  dequantize_row_q5_1(q1.data(), y1.data(), kN);
  for (int64_t b = 0; b < kN / 32; ++b) {
    const float d0 = std::fabs(f16_to_f32(q0[b].d));
    const float d1 = f16_to_f32(q1[b].d), m1 = f16_to_f32(q1[b].m);
    const float bound1 = 0.5f * d1 + (std::fabs(m1) + 31 * d1) * kF16Rel;  // as Q4_1's, 31 steps
    for (int j = 0; j < 32; ++j) {
      const int64_t i = b * 32 + j;
      EXPECT_LE(std::fabs(y0[i] - x[i]), d0 * (1.0f + 16 * kF16Rel)) << "q5_0 " << i;
      EXPECT_LE(std::fabs(y1[i] - x[i]), bound1) << "q5_1 " << i;
    }
  }
  // Values already on the grid quantize to themselves.
  quantize_row_q5_0(y0.data(), q0_again.data(), kN);
  dequantize_row_q5_0(q0_again.data(), y0_again.data(), kN);
  EXPECT_EQ(y0, y0_again);
}

// Q4_K and Q6_K: every value within one step of its sub-block (the 6-bit or
// 8-bit rounding of the step itself moves the grid by up to half a unit of
// d, times the largest q), checked through the reference dequantizer.
TEST(Quantize, Q4_KAndQ6_KWithinTheirSubBlockSteps) {
  constexpr int64_t kK = 256 * 6;
  const auto x = random_floats(kK, 9);
  std::vector<BlockQ4K> q4(kK / 256);
  std::vector<BlockQ6K> q6(kK / 256);
  std::vector<float> y4(kK), y6(kK);
  quantize_row_q4_k(x.data(), q4.data(), kK);
  quantize_row_q6_k(x.data(), q6.data(), kK);
  dequantize_row_q4_k(q4.data(), y4.data(), kK);
  dequantize_row_q6_k(q6.data(), y6.data(), kK);
  for (int64_t b = 0; b < kK / 256; ++b) {
    const float d4 = f16_to_f32(q4[b].d), dmin4 = f16_to_f32(q4[b].dmin), d6 = f16_to_f32(q6[b].d);
    for (int e = 0; e < 256; ++e) {
      const int64_t i = b * 256 + e;
      // Q4_K: half a step (<= 63 d / 2) plus the step's and min's rounding to
      // whole d and dmin (half each, times q <= 15 and once).
      EXPECT_LE(std::fabs(y4[i] - x[i]), 0.5f * 63 * d4 + 0.5f * 15 * d4 + 0.5f * dmin4 + 1e-6f) << "q4_k " << i;
      EXPECT_LE(std::fabs(y6[i] - x[i]), 0.5f * 127 * d6 + 0.5f * 31 * d6 + 1e-6f) << "q6_k " << i;
    }
  }
  // Far tighter in practice (Gaussian values: 8.3% and 2.0% of the mean magnitude).
  double err4 = 0, err6 = 0, mag = 0;
  for (int64_t i = 0; i < kK; ++i) {
    err4 += std::fabs(y4[i] - x[i]);
    err6 += std::fabs(y6[i] - x[i]);
    mag += std::fabs(x[i]);
  }
  EXPECT_LT(err4 / mag, 0.10) << "Q4_K relative mean error";
  EXPECT_LT(err6 / mag, 0.025) << "Q6_K relative mean error";
}

TEST(Quantize, Q4_1WithinHalfStep) {
  const auto x = random_floats(kN, 2);
  std::vector<BlockQ4_1> q(kN / 32);
  std::vector<float> y(kN);
  quantize_row_q4_1(x.data(), q.data(), kN);
  dequantize_row_q4_1(q.data(), y.data(), kN);
  for (int64_t b = 0; b < kN / 32; ++b) {
    const float d = f16_to_f32(q[b].d), m = f16_to_f32(q[b].m);
    const float bound = 0.5f * d + (std::fabs(m) + 15 * d) * kF16Rel;
    for (int j = 0; j < 32; ++j) EXPECT_LE(std::fabs(y[b * 32 + j] - x[b * 32 + j]), bound) << b * 32 + j;
  }
}

TEST(Quantize, Q8_0AndQ8_1WithinHalfStep) {
  const auto x = random_floats(kN, 3);
  std::vector<BlockQ8_0> q0(kN / 32);
  std::vector<BlockQ8_1> q1(kN / 32);
  std::vector<float> y0(kN), y1(kN);
  quantize_row_q8_0(x.data(), q0.data(), kN);
  quantize_row_q8_1(x.data(), q1.data(), kN);
  dequantize_row_q8_0(q0.data(), y0.data(), kN);
  dequantize_row_q8_1(q1.data(), y1.data(), kN);
  for (int64_t b = 0; b < kN / 32; ++b) {
    const float d = f16_to_f32(q0[b].d);
    const float bound = 0.5f * d + 127 * d * kF16Rel;
    int sum = 0;
    for (int j = 0; j < 32; ++j) {
      const int64_t i = b * 32 + j;
      EXPECT_LE(std::fabs(y0[i] - x[i]), bound) << i;
      EXPECT_EQ(y0[i], y1[i]) << i;  // same d and q
      sum += q1[b].qs[j];
    }
    // s = d * sum(q), rounded once to f16.
    const float s_exact = f16_to_f32(q1[b].d) * static_cast<float>(sum);
    EXPECT_NEAR(f16_to_f32(q1[b].s), s_exact, std::fabs(s_exact) * kF16Rel + 1e-7f) << b;
  }
}

TEST(Quantize, AllZeroBlockIsExact) {
  std::vector<float> x(64, 0.0f), y(64, 1.0f);
  std::vector<BlockQ4_1> q(2);
  quantize_row_q4_1(x.data(), q.data(), 64);
  dequantize_row_q4_1(q.data(), y.data(), 64);
  for (float v : y) EXPECT_EQ(v, 0.0f);
  std::vector<BlockQ8_1> a(2);
  quantize_row_q8_1(x.data(), a.data(), 64);
  EXPECT_EQ(f16_to_f32(a[0].d), 0.0f);
  EXPECT_EQ(f16_to_f32(a[1].s), 0.0f);
}

// The SIMD activation quantizers are bit-identical to the scalar one.
class QuantizeLevel : public ::testing::TestWithParam<IsaLevel> {};

TEST_P(QuantizeLevel, Q8_1MatchesScalarBitForBit) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  const KernelTable* k = kernels_for(GetParam());
  ASSERT_NE(k, nullptr);
  auto x = random_floats(kN, 4, 3.0f);
  x[7] = 0.0f;
  x[40] = 1e-30f;  // subnormal-scale block neighbours
  for (int j = 64; j < 96; ++j) x[j] = 0.0f;  // an all-zero block
  std::vector<BlockQ8_1> want(kN / 32), got(kN / 32);
  quantize_row_q8_1(x.data(), want.data(), kN);
  k->quantize_q8_1(x.data(), got.data(), kN);
  for (int64_t b = 0; b < kN / 32; ++b) {
    EXPECT_EQ(got[b].d, want[b].d) << "block " << b;
    EXPECT_EQ(got[b].s, want[b].s) << "block " << b;
    for (int j = 0; j < 32; ++j) EXPECT_EQ(got[b].qs[j], want[b].qs[j]) << "block " << b << " element " << j;
  }
}

TEST_P(QuantizeLevel, Q8_KMatchesScalarBitForBit) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  const KernelTable* k = kernels_for(GetParam());
  ASSERT_NE(k, nullptr);
  constexpr int64_t kSuper = 4 * kSuperBlock;
  auto x = random_floats(kSuper, 5, 3.0f);
  x[7] = 0.0f;
  x[300] = 1e-30f;
  for (int j = 512; j < 768; ++j) x[j] = 0.0f;   // an all-zero super-block
  for (int j = 768; j < 1024; ++j) x[j] *= 1e-3f;  // a small-scale one
  x[1000] = 0.5f;                                   // with one element at the rounding midpoint's scale
  std::vector<BlockQ8K> want(kSuper / kSuperBlock), got(kSuper / kSuperBlock);
  quantize_row_q8_k(x.data(), want.data(), kSuper);
  k->quantize_q8_k(x.data(), got.data(), kSuper);
  for (size_t b = 0; b < want.size(); ++b) {
    EXPECT_EQ(got[b].d, want[b].d) << "super-block " << b;
    for (int j = 0; j < kSuperBlock; ++j) ASSERT_EQ(got[b].qs[j], want[b].qs[j]) << "super-block " << b << " element " << j;
    for (int g = 0; g < kSuperBlock / 16; ++g) EXPECT_EQ(got[b].bsums[g], want[b].bsums[g]) << "super-block " << b << " group " << g;
  }
}

// The activation row of q8x2 at every level, against the terms it stands for
// written out plainly: the first term is quantize_row_q8_1(x), the second
// quantize_row_q8_1 of r = x - d q (rounded once: d q is exact), the s fields
// carry the block's sum of x (f16 rounding, then what it left out), and the
// widened scales what the repacked kernels read.
TEST_P(QuantizeLevel, ActivationRowIsTheTermsItStandsFor) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  const KernelTable* k = kernels_for(GetParam());
  ASSERT_NE(k, nullptr);
  constexpr int64_t kRow = 32 * 19;  // 19 blocks: two chunks of the second term's 8 and a partial one
  constexpr int64_t kNb = kRow / 32;
  auto x = random_floats(kRow, 6, 3.0f);
  for (int j = 64; j < 96; ++j) x[j] = 0.0f;         // an all-zero block
  for (int j = 96; j < 128; ++j) x[j] *= 1e-2f;      // a small-scale one
  x[200] = 1e-30f;
  for (const int terms : {1, 2}) {
    for (const int32_t excess : {0, 8, 128}) {
      std::vector<BlockQ8_1> want(terms * kNb), got(terms * kNb);
      std::vector<ActivationScales> scales(terms * kNb);
      quantize_row_q8_1(x.data(), want.data(), kRow);
      std::vector<double> sums(kNb);
      for (int64_t b = 0; b < kNb; ++b)
        for (int j = 0; j < 32; ++j) sums[b] += x[b * 32 + j];  // in order: these blocks sum exactly in any
      if (terms == 2) {
        std::vector<float> r(kRow);
        for (int64_t i = 0; i < kRow; ++i) {
          const double d = f16_to_f32(want[i / 32].d);
          r[i] = static_cast<float>(static_cast<double>(x[i]) - d * want[i / 32].qs[i % 32]);
          ASSERT_LE(std::fabs(r[i]), 0.57 * d) << i;
        }
        quantize_row_q8_1(r.data(), want.data() + kNb, kRow);
        for (int64_t b = 0; b < kNb; ++b) {
          const auto sum = static_cast<float>(sums[b]);
          want[b].s = f32_to_f16(sum);
          want[kNb + b].s = f32_to_f16(sum - f16_to_f32(want[b].s));
        }
      }
      k->quantize_activation_row(x.data(), kRow, terms, excess, got.data(), scales.data());
      for (int64_t b = 0; b < terms * kNb; ++b) {
        EXPECT_EQ(got[b].d, want[b].d) << terms << " terms, block " << b;
        EXPECT_EQ(got[b].s, want[b].s) << terms << " terms, block " << b;
        int32_t quant_sum = 0;
        for (int j = 0; j < 32; ++j) {
          ASSERT_EQ(got[b].qs[j], want[b].qs[j]) << terms << " terms, block " << b << " element " << j;
          quant_sum += want[b].qs[j];
        }
        EXPECT_EQ(scales[b].d, f16_to_f32(want[b].d)) << b;
        const float s = terms == 1 ? f16_to_f32(want[b].s) : b < kNb ? static_cast<float>(sums[b]) : 0.0f;
        EXPECT_EQ(scales[b].s, s) << terms << " terms, block " << b;
        EXPECT_EQ(scales[b].q_offset, -excess * quant_sum) << terms << " terms, block " << b;
      }
      std::vector<BlockQ8_1> without_scales(terms * kNb);
      k->quantize_activation_row(x.data(), kRow, terms, excess, without_scales.data(), nullptr);
      EXPECT_EQ(std::memcmp(without_scales.data(), got.data(), got.size() * sizeof(BlockQ8_1)), 0);
    }
  }
  // Blocks whose sums are not exact in double (values 2^60 apart; d stays an
  // f16): the order is the one written out in activation_row_impl.hpp at
  // every level, so the sums, and the rows, are the scalar level's to the bit.
  auto wide = random_floats(kRow, 7, 1.0f);
  for (int64_t b = 0; b < kNb; ++b) {
    wide[b * 32 + b % 32] = 1e6f;
    wide[b * 32 + (b + 7) % 32] = -1e6f;
    wide[b * 32 + (b + 13) % 32] *= 1e-12f;
  }
  std::vector<BlockQ8_1> want(2 * kNb), got(2 * kNb);
  std::vector<ActivationScales> want_scales(2 * kNb), got_scales(2 * kNb);
  scalar_kernel_table().quantize_activation_row(wide.data(), kRow, 2, 16, want.data(), want_scales.data());
  k->quantize_activation_row(wide.data(), kRow, 2, 16, got.data(), got_scales.data());
  EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(BlockQ8_1)), 0);
  for (int64_t b = 0; b < 2 * kNb; ++b) {
    EXPECT_EQ(got_scales[b].s, want_scales[b].s) << "block " << b;
    EXPECT_EQ(got_scales[b].d, want_scales[b].d) << "block " << b;
    EXPECT_EQ(got_scales[b].q_offset, want_scales[b].q_offset) << "block " << b;
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, QuantizeLevel, ::testing::ValuesIn(testing::all_levels()),
                         testing::level_param_name);

}  // namespace
}  // namespace tessera::ggml
