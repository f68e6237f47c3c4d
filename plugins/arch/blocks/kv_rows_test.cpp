// store_kv: every level's f16 narrowing gives the SDK kv_store's bits (round
// to nearest even), including the values where rounding is delicate.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tessera/blocks/kv_rows.hpp"
#include "tessera/half.hpp"
#include "tessera/isa.hpp"

namespace tessera::blocks {

TESSERA_ISA_DECLARE(void narrow_to_f16_kernel(const float* src, uint16_t* dst, int64_t n) noexcept)

namespace {

using NarrowKernel = void (*)(const float*, uint16_t*, int64_t) noexcept;
const NarrowKernel kLevels[kIsaLevelCount] = TESSERA_ISA_TABLE(narrow_to_f16_kernel);

// Values that round up, down and to even in f16, subnormals, overflow to inf,
// signed zeros, NaN, and an ordinary spread; 1000 + of them so that vector
// bodies and tails both run.
std::vector<float> delicate_values() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65520.0f, -65536.0f, 1e-8f, -3e-7f, 6.1e-5f, 5.96e-8f,
                          inf, -inf, std::nanf("")};
  for (int i = 0; i < 1000; ++i) {
    v.push_back(-40.0f + 80.0f * static_cast<float>(i) / 999.0f);
    // 1 + k/2048 (+ a hair): exactly halfway between two f16 values, or just past.
    v.push_back(1.0f + static_cast<float>(i % 64) / 2048.0f + (i % 2 ? 0.0f : 1e-7f));
  }
  return v;
}

class NarrowLevel : public ::testing::TestWithParam<int> {};

TEST_P(NarrowLevel, GivesTheScalarConversionsBits) {
  const auto level = static_cast<IsaLevel>(GetParam());
  if (!cpu_supports(level)) GTEST_SKIP() << "this CPU lacks " << isa_level_name(level);
  const NarrowKernel kernel = isa_select(kLevels, level);  // amx: avx512_vnni's variant
  ASSERT_NE(kernel, nullptr) << isa_level_name(level) << " is not compiled on this platform";
  const std::vector<float> values = delicate_values();
  for (const auto n : {size_t{0}, size_t{1}, size_t{7}, size_t{9}, values.size()}) {
    std::vector<uint16_t> got(n + 1, 0xABCD);  // the guard past the end must stay
    kernel(values.data(), got.data(), static_cast<int64_t>(n));
    for (size_t i = 0; i < n; ++i) {
      const uint16_t want = f32_to_f16(values[i]);
      if (std::isnan(values[i])) {
        EXPECT_TRUE(std::isnan(f16_to_f32(got[i]))) << "NaN at " << i;
      } else {
        EXPECT_EQ(got[i], want) << values[i] << " at " << i;
      }
    }
    EXPECT_EQ(got[n], 0xABCD) << "wrote past n = " << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, NarrowLevel, ::testing::Range(0, TESSERA_ISA_X86 ? kIsaLevelCount : 1),
                         [](const auto& info) { return std::string(isa_level_name(static_cast<IsaLevel>(info.param))); });

TEST(StoreKv, WritesF32AndF16PoolsLikeTheSdk) {
  const std::vector<float> values = delicate_values();
  const auto n = static_cast<int64_t>(values.size());
  std::vector<float> pool32(values.size() + 8, 7.0f), want32(pool32);
  std::vector<uint16_t> pool16(values.size() + 8, 0x1234), want16(pool16);
  KvLayerView view32{};
  view32.dtype = DType::f32;
  KvLayerView view16{};
  view16.dtype = DType::f16;
  store_kv(view32, pool32.data(), 3, values.data(), n);
  kv_store(view32, want32.data(), 3, values.data(), n);
  store_kv(view16, pool16.data(), 3, values.data(), n);
  kv_store(view16, want16.data(), 3, values.data(), n);
  for (size_t i = 0; i < pool32.size(); ++i) {
    if (std::isnan(want32[i])) continue;
    EXPECT_EQ(pool32[i], want32[i]) << i;
  }
  for (size_t i = 0; i < pool16.size(); ++i) {
    if (std::isnan(f16_to_f32(want16[i]))) continue;
    EXPECT_EQ(pool16[i], want16[i]) << i;
  }
}

}  // namespace
}  // namespace tessera::blocks
