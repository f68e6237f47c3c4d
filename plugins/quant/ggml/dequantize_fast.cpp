// dequantize_fast.cpp: dequantize_row_fast at the best instruction-set level
// (the loops: dequantize_rows.cpp, one copy per level).
#include "dequantize_fast.hpp"

#include "tessera/isa.hpp"

namespace tessera::ggml {

TESSERA_ISA_DECLARE(bool dequantize_row_kernel(DType type, const void* x, float* y, int64_t n))

bool dequantize_row_fast(DType type, const void* x, float* y, int64_t n) {
  using Kernel = bool (*)(DType, const void*, float*, int64_t);
  static const Kernel kernel = isa_select<Kernel>(TESSERA_ISA_TABLE(dequantize_row_kernel));
  return kernel(type, x, y, n);
}

}  // namespace tessera::ggml
