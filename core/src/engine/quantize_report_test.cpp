// QuantizeReport's summaries of the method's error over rounding's: geometric
// means over all weights and over each kind of weight.
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
  ASSERT_TRUE(kinds[0].held_out.has_value());
  EXPECT_NEAR(kinds[0].calibration, std::sqrt(0.25 * 1.0), 1e-12);
  EXPECT_NEAR(*kinds[0].held_out, std::sqrt(0.5 * 2.0), 1e-12);
  EXPECT_FALSE(kinds[0].held_out_tokens.has_value());
  EXPECT_EQ(kinds[1].kind, "ffn_down.weight");
  EXPECT_NEAR(kinds[1].calibration, 0.5, 1e-12);
  EXPECT_NEAR(r.mean_gain_over_rounding(), std::cbrt(0.25 * 1.0 * 0.5), 1e-12);
}

}  // namespace
}  // namespace tessera
