// gptq_linear_algebra.cpp: inverse_cholesky_upper and subtract_product at the
// chosen instruction-set level (the kernels: gptq_linear_algebra_rows.cpp,
// one copy per level).
#include "gptq_linear_algebra.hpp"

namespace tessera::ggml {

TESSERA_ISA_DECLARE(FactorOutcome inverse_cholesky_upper_kernel(const float* h, int64_t n, float shift, float* u))
TESSERA_ISA_DECLARE(bool subtract_product_kernel(float* c, int64_t ldc, const float* a, int64_t lda, const float* b,
                                                 int64_t ldb, int64_t m, int64_t n, int64_t k))

FactorOutcome inverse_cholesky_upper(const float* h, int64_t n, float shift, float* u, IsaLevel level) {
  using Kernel = FactorOutcome (*)(const float*, int64_t, float, float*);
  return isa_select<Kernel>(TESSERA_ISA_TABLE(inverse_cholesky_upper_kernel), level)(h, n, shift, u);
}

bool subtract_product(float* c, int64_t ldc, const float* a, int64_t lda, const float* b, int64_t ldb, int64_t m,
                      int64_t n, int64_t k, IsaLevel level) {
  using Kernel = bool (*)(float*, int64_t, const float*, int64_t, const float*, int64_t, int64_t, int64_t, int64_t);
  return isa_select<Kernel>(TESSERA_ISA_TABLE(subtract_product_kernel), level)(c, ldc, a, lda, b, ldb, m, n, k);
}

}  // namespace tessera::ggml
