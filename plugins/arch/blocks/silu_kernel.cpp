// silu_kernel.cpp: the SwiGLU gate loop, compiled once per instruction-set
// level (tessera_isa_variants in CMakeLists.txt) with -fno-trapping-math, so
// that GCC turns the clamp's compares into selects and the loop vectorizes.
#include <cstdint>

#include "tessera/blocks/silu.hpp"

namespace tessera::blocks::TESSERA_ISA_NAMESPACE {

void silu_mul_kernel(float* gate, const float* up, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    const auto e = static_cast<float>(exp_for_float(-static_cast<double>(g)));
    gate[i] = g / (1.0f + e) * up[i];
  }
}

}  // namespace tessera::blocks::TESSERA_ISA_NAMESPACE
