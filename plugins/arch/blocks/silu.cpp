#include "tessera/blocks/silu.hpp"

#include "tessera/simd_clones.hpp"

// Compiled with -fno-trapping-math (CMakeLists.txt): otherwise GCC keeps the
// clamp's compares as branches and the loop stays scalar.

namespace tessera::blocks {
// In an anonymous namespace (tessera/simd_clones.hpp).
namespace {

TESSERA_SIMD_CLONES
void silu_mul_impl(float* gate, const float* up, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    const auto e = static_cast<float>(exp_for_float(-static_cast<double>(g)));
    gate[i] = g / (1.0f + e) * up[i];
  }
}

}  // namespace

void silu_mul(float* gate, const float* up, int64_t n) { silu_mul_impl(gate, up, n); }

}  // namespace tessera::blocks
