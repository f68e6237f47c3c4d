// silu.cpp: silu_mul at the best instruction-set level (the loop: silu_kernel.cpp).
#include "tessera/blocks/silu.hpp"

#include "tessera/isa.hpp"

namespace tessera::blocks {

TESSERA_ISA_DECLARE(void silu_mul_kernel(float* gate, const float* up, int64_t n))

void silu_mul(float* gate, const float* up, int64_t n) {
  using Kernel = void (*)(float*, const float*, int64_t);
  static const Kernel kernel = isa_select<Kernel>(TESSERA_ISA_TABLE(silu_mul_kernel));
  kernel(gate, up, n);
}

}  // namespace tessera::blocks
