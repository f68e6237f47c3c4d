// ssm_testing.hpp: inputs for the recurrent kernels' tests and benchmark.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace tessera::mamba::testing {

// n values drawn uniformly from [lo, hi), the same for the same seed.
inline std::vector<float> random_values(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

}  // namespace tessera::mamba::testing
