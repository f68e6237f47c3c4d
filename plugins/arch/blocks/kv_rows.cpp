// kv_rows.cpp: store_kv at the best instruction-set level (the f16 narrowing
// loop: kv_rows_kernel.cpp).
#include "tessera/blocks/kv_rows.hpp"

#include <cstring>

#include "tessera/isa.hpp"

namespace tessera::blocks {

TESSERA_ISA_DECLARE(void narrow_to_f16_kernel(const float* src, uint16_t* dst, int64_t n) noexcept)

void store_kv(const KvLayerView& view, void* pool, int64_t offset, const float* src, int64_t n) noexcept {
  if (view.dtype != DType::f16) {
    std::memcpy(static_cast<float*>(pool) + offset, src, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  using Kernel = void (*)(const float*, uint16_t*, int64_t) noexcept;
  static const Kernel kernel = isa_select<Kernel>(TESSERA_ISA_TABLE(narrow_to_f16_kernel));
  kernel(src, static_cast<uint16_t*>(pool) + offset, n);
}

}  // namespace tessera::blocks
