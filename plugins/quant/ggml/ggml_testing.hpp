// ggml_testing.hpp: shared helpers for the ggml plugin tests.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "blocks.hpp"
#include "kernels.hpp"
#include "tessera/half.hpp"
#include "tessera/tensor.hpp"

namespace tessera::ggml::testing {

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

inline std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// Stores d (and, for Q2_K/Q4_K/Q5_K, dmin) as f16 in a K-quant super-block:
// Q4_K/Q5_K keep d then dmin first, Q2_K last, Q3_K and Q6_K keep d last.
inline void set_kquant_scales(DType type, uint8_t* block, float d, float dmin) {
  const uint16_t dh = f32_to_f16(d), dminh = f32_to_f16(dmin);
  if (type == DType::q6_k) {
    std::memcpy(block + offsetof(BlockQ6K, d), &dh, 2);
  } else if (type == DType::q3_k) {
    std::memcpy(block + offsetof(BlockQ3K, d), &dh, 2);
  } else if (type == DType::q2_k) {
    std::memcpy(block + offsetof(BlockQ2K, d), &dh, 2);
    std::memcpy(block + offsetof(BlockQ2K, dmin), &dminh, 2);
  } else {
    std::memcpy(block + offsetof(BlockQ4K, d), &dh, 2);
    std::memcpy(block + offsetof(BlockQ4K, dmin), &dminh, 2);
  }
}

// set_kquant_scales on every super-block of `bytes` bytes of `type`.
inline void set_every_kquant_scale(DType type, uint8_t* data, size_t bytes, float d, float dmin) {
  const size_t block_bytes = dtype_info(type).block_bytes;
  for (size_t at = 0; at + block_bytes <= bytes; at += block_bytes) set_kquant_scales(type, data + at, d, dmin);
}

// Every SIMD level, for parametrized tests; the test skips levels this CPU lacks.
inline std::vector<IsaLevel> all_levels() {
  return {IsaLevel::scalar, IsaLevel::avx2, IsaLevel::avx512, IsaLevel::avx512_vnni, IsaLevel::amx};
}

inline std::string level_param_name(const ::testing::TestParamInfo<IsaLevel>& info) {
  return std::string(isa_level_name(info.param));
}

// Forces a SIMD level for the lifetime of the object, restoring the best one after.
class ScopedLevel {
 public:
  explicit ScopedLevel(IsaLevel level) : ok_(force_isa_level(level)) {}
  ~ScopedLevel() { (void)force_isa_level(best_isa_level()); }
  bool ok() const { return ok_; }

 private:
  bool ok_;
};

}  // namespace tessera::ggml::testing

// Skip (with the reason printed) a level the CPU cannot run.
#define TESSERA_SKIP_IF_UNSUPPORTED(level)                                                   \
  do {                                                                                       \
    if (!::tessera::cpu_supports(level))                                               \
      GTEST_SKIP() << "this CPU lacks " << ::tessera::isa_level_name(level);          \
  } while (0)
