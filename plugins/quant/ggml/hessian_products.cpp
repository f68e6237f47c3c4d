// hessian_products.cpp: add_gram and hessian_quadratic at the chosen
// instruction-set level (the products: hessian_products_rows.cpp, one copy
// per level).
#include "hessian_products.hpp"

namespace tessera::ggml {

TESSERA_ISA_DECLARE(bool add_gram_kernel(const float* x, int64_t rows, int64_t cols, float* h))
TESSERA_ISA_DECLARE(bool hessian_quadratic_kernel(const float* m, int64_t rows, int64_t cols, const float* h,
                                                 double* trace))

bool add_gram(const float* x, int64_t rows, int64_t cols, float* h, IsaLevel level) {
  using Kernel = bool (*)(const float*, int64_t, int64_t, float*);
  return isa_select<Kernel>(TESSERA_ISA_TABLE(add_gram_kernel), level)(x, rows, cols, h);
}

std::optional<double> hessian_quadratic(const float* m, int64_t rows, int64_t cols, const float* h, IsaLevel level) {
  using Kernel = bool (*)(const float*, int64_t, int64_t, const float*, double*);
  double trace = 0;
  if (!isa_select<Kernel>(TESSERA_ISA_TABLE(hessian_quadratic_kernel), level)(m, rows, cols, h, &trace))
    return std::nullopt;
  return trace;
}

}  // namespace tessera::ggml
