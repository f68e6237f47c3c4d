// The F16C bulk conversions of tessera/half.hpp, compiled for the avx2 level
// (tessera_isa_sources in CMakeLists.txt) so that the test can call them.
#include "half_f16c_kernels.hpp"

#include "tessera/half.hpp"

namespace tessera::test {

void f16c_widen(const uint16_t* src, float* dst, int64_t n) { f16c::f16_to_f32_n(src, dst, n); }
void f16c_narrow(const float* src, uint16_t* dst, int64_t n) { f16c::f32_to_f16_n(src, dst, n); }

}  // namespace tessera::test
