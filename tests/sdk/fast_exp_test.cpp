// tessera/fast_exp.hpp: the polynomial exp against std::exp over its whole
// domain, and its edge cases.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tessera/fast_exp.hpp"

namespace tessera {
namespace {

TEST(FastExp, PolynomialExpTracksStdExp) {
  double worst = 0.0;
  for (int i = 0; i <= 870000; ++i) {
    const float x = -static_cast<float>(i) * 1e-4f;  // [-87, 0]
    const double exact = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::abs(exp_nonpositive(x) - exact) / exact);
  }
  EXPECT_LT(worst, 2e-7);
  EXPECT_EQ(exp_nonpositive(0.0f), 1.0f);
  EXPECT_LT(exp_nonpositive(-1000.0f), 1e-37f);
  EXPECT_LT(exp_nonpositive(-std::numeric_limits<float>::infinity()), 1e-37f);
  EXPECT_TRUE(std::isnan(exp_nonpositive(std::numeric_limits<float>::quiet_NaN())));
}

}  // namespace
}  // namespace tessera
