// gram_update.cpp: add_gram at the chosen instruction-set level (the
// products: gram_update_rows.cpp, one copy per level).
#include "gram_update.hpp"

namespace tessera::ggml {

TESSERA_ISA_DECLARE(bool add_gram_kernel(const float* x, int64_t rows, int64_t cols, float* h))

bool add_gram(const float* x, int64_t rows, int64_t cols, float* h, IsaLevel level) {
  using Kernel = bool (*)(const float*, int64_t, int64_t, float*);
  return isa_select<Kernel>(TESSERA_ISA_TABLE(add_gram_kernel), level)(x, rows, cols, h);
}

}  // namespace tessera::ggml
