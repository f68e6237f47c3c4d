#include "engine/calibration_linear.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

namespace tessera {
namespace {

// y = W·x for a fixed 2 x 3 W.
class SmallLinear final : public Linear {
 public:
  int64_t in_features() const noexcept override { return 3; }
  int64_t out_features() const noexcept override { return 2; }
  uint64_t weight_bytes() const noexcept override { return 6 * sizeof(float); }
  Status forward(const float* x, float* y, int64_t n_rows) noexcept override {
    for (int64_t r = 0; r < n_rows; ++r) {
      y[r * 2 + 0] = x[r * 3 + 0] + 2 * x[r * 3 + 1] + 3 * x[r * 3 + 2];
      y[r * 2 + 1] = -x[r * 3 + 0] + x[r * 3 + 2];
    }
    return Status::Ok();
  }
};

// Keeps every row it is shown.
class RowRecorder final : public WeightQuantizer {
 public:
  bool wants_inputs() const noexcept override { return true; }
  Status observe(const float* x, int64_t n_rows) noexcept override {
    rows.insert(rows.end(), x, x + n_rows * 3);
    return Status::Ok();
  }
  Result<QuantizedWeight> quantize(const float*) noexcept override { return Internal("not in this test"); }
  std::vector<float> rows;
};

const std::vector<float> kInputs = {1, -2, 0.5f, 3, 0, -1};  // [2 rows, 3]

TEST(CalibrationLinear, ObservingHandsTheRowsOnAndMultipliesByTheOriginalWeight) {
  bool stopped = false;
  CalibrationLinear linear(std::make_unique<SmallLinear>(), &stopped);
  RowRecorder recorder;
  linear.observe_into(&recorder);
  std::vector<float> y(4, std::numeric_limits<float>::quiet_NaN());
  ASSERT_TRUE(linear.forward(kInputs.data(), y.data(), 2).ok());
  EXPECT_EQ(recorder.rows, kInputs);
  EXPECT_EQ(y, (std::vector<float>{1 - 4 + 1.5f, -1 + 0.5f, 3 - 3, -3 - 1}));
  EXPECT_EQ(linear.observed_rows(), 2);
  EXPECT_EQ(linear.mean_abs_input(), (std::vector<float>{2, 1, 0.75f}));
  EXPECT_FALSE(stopped);
}

// A true-sequential stage's pass never reads its products: zeros, the same
// rows observed, the same statistics.
TEST(CalibrationLinear, ObservingWithoutTheProductWritesZeros) {
  bool stopped = false;
  CalibrationLinear linear(std::make_unique<SmallLinear>(), &stopped);
  RowRecorder recorder;
  linear.observe_into(&recorder, 0, /*product=*/false);
  std::vector<float> y(4, std::numeric_limits<float>::quiet_NaN());
  ASSERT_TRUE(linear.forward(kInputs.data(), y.data(), 2).ok());
  EXPECT_EQ(recorder.rows, kInputs);
  EXPECT_EQ(y, std::vector<float>(4, 0.0f));
  EXPECT_EQ(linear.observed_rows(), 2);
  EXPECT_EQ(linear.mean_abs_input(), (std::vector<float>{2, 1, 0.75f}));
  EXPECT_EQ(linear.max_abs_input(), (std::vector<float>{3, 2, 1}));
}

TEST(CalibrationLinear, StopEndsThePassAndSaysSo) {
  bool stopped = false;
  CalibrationLinear linear(std::make_unique<SmallLinear>(), &stopped);
  linear.stop();
  std::vector<float> y(4);
  const Status ran = linear.forward(kInputs.data(), y.data(), 2);
  EXPECT_FALSE(ran.ok());
  EXPECT_TRUE(stopped);
  linear.use_reference();  // the layer is reached after all: the original weight again
  stopped = false;
  ASSERT_TRUE(linear.forward(kInputs.data(), y.data(), 2).ok());
  EXPECT_FALSE(stopped);
  EXPECT_EQ(y[3], -4.0f);
}

}  // namespace
}  // namespace tessera
