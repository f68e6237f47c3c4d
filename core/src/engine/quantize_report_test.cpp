// QuantizeReport's per-kind summary: geometric means of each kind's error
// ratios, and no calibration ratio where the method has no rounding error on
// the calibration inputs to compare with (INT8).
#include <gtest/gtest.h>

#include <cmath>

#include "engine/quantize_model.hpp"

namespace tessera {
namespace {

QuantizedWeightReport weight(const std::string& name, double error, double rounding_error, double held_out,
                             double held_out_rounding) {
  QuantizedWeightReport w;
  w.name = name;
  w.relative_error = error;
  w.rounding_relative_error = rounding_error;
  w.held_out_error = held_out;
  w.held_out_rounding_error = held_out_rounding;
  return w;
}

TEST(QuantizeReport, GainsByKindAreGeometricMeansOfEachKindsRatios) {
  QuantizeReport r;
  r.weights = {weight("blk.0.attn_q.weight", 0.1, 0.4, 0.2, 0.4), weight("blk.1.attn_q.weight", 0.4, 0.4, 0.4, 0.2),
               weight("blk.0.ffn_down.weight", 0.3, 0.6, 0.3, 0.3)};
  const auto kinds = r.gains_by_kind();
  ASSERT_EQ(kinds.size(), 2u);
  EXPECT_EQ(kinds[0].kind, "attn_q.weight");
  EXPECT_EQ(kinds[0].weights, 2);
  ASSERT_TRUE(kinds[0].calibration && kinds[0].held_out);
  EXPECT_NEAR(*kinds[0].calibration, std::sqrt(0.25 * 1.0), 1e-12);
  EXPECT_NEAR(*kinds[0].held_out, std::sqrt(0.5 * 2.0), 1e-12);
  EXPECT_FALSE(kinds[0].held_out_tokens.has_value());
  EXPECT_EQ(kinds[1].kind, "ffn_down.weight");
  EXPECT_NEAR(*kinds[1].calibration, 0.5, 1e-12);
}

// INT8 reports no rounding error on the calibration inputs (0): its kinds
// have no calibration ratio, not a ratio of 1, and their held-out ratios stand.
TEST(QuantizeReport, AKindWithoutARoundingErrorHasNoCalibrationRatio) {
  QuantizeReport r;
  r.weights = {weight("blk.0.attn_v.weight", 0.01, 0.0, 0.02, 0.04)};
  const auto kinds = r.gains_by_kind();
  ASSERT_EQ(kinds.size(), 1u);
  EXPECT_FALSE(kinds[0].calibration.has_value());
  ASSERT_TRUE(kinds[0].held_out.has_value());
  EXPECT_NEAR(*kinds[0].held_out, 0.5, 1e-12);
  EXPECT_TRUE(r.to_json()["gains_by_kind"][0]["calibration"].is_null());
}

}  // namespace
}  // namespace tessera
