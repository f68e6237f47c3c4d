// tessera::f16c's bulk conversions behind functions the baseline test can
// call (only where the CPU runs the avx2 level).
#pragma once

#include <cstdint>

namespace tessera::test {

void f16c_widen(const uint16_t* src, float* dst, int64_t n);
void f16c_narrow(const float* src, uint16_t* dst, int64_t n);

}  // namespace tessera::test
