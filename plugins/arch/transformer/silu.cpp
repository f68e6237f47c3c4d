#include "silu.hpp"

// Compiled with -fno-trapping-math (CMakeLists.txt): otherwise GCC keeps the
// clamp's compares as branches and the loop stays scalar.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TESSERA_SILU_CLONES __attribute__((target_clones("avx512f", "arch=haswell", "default")))
#else
#define TESSERA_SILU_CLONES
#endif

namespace tessera::transformer {
// In an anonymous namespace: an external target_clones function's ifunc
// resolver would be exported despite -fvisibility=hidden.
namespace {

TESSERA_SILU_CLONES
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

}  // namespace tessera::transformer
