// kv_rows_kernel.cpp: f32 -> f16 narrowing, compiled once per instruction-set
// level (tessera_isa_variants in CMakeLists.txt): F16C where the level has it,
// the exact scalar loop otherwise; both round to nearest even.
#include <cstdint>

#include "tessera/half.hpp"

namespace tessera::blocks::TESSERA_ISA_NAMESPACE {

void narrow_to_f16_kernel(const float* src, uint16_t* dst, int64_t n) noexcept {
#if defined(__F16C__) && defined(__AVX__)
  f16c::f32_to_f16_n(src, dst, n);
#else
  f32_to_f16_n(src, dst, n);
#endif
}

}  // namespace tessera::blocks::TESSERA_ISA_NAMESPACE
