#pragma once
// GPTQ's dense linear algebra (grid_quantize.cpp): the Cholesky factor of
// H⁻¹ and the lazy-batch updates of the columns not yet quantized.
//
// Eigen's own kernels compiled once per instruction-set level
// (gptq_linear_algebra_rows.cpp) and picked at run time, as
// hessian_products.hpp does for H itself. Not OpenBLAS: it picks its kernels
// by CPU model when it loads, and a CPU newer than its build gets its
// slowest ones (OpenBLAS 0.3.21 on an Emerald Rapids Xeon: the SSE3
// "Prescott" kernels, under which a Qwen2.5-0.5B layer's quantizing phase
// took 7.4 s against 4.2 s on these; docs/quantization.md has the figures).
#include <cstdint>

#include "tessera/isa.hpp"

namespace tessera::ggml {

enum class FactorOutcome { ok, not_positive_definite, out_of_memory };

// u: [n, n] column-major, the upper-triangular U with a positive diagonal and
// (H + shift·I)⁻¹ = Uᵀ·U, for h: [n, n] column-major, symmetric with both
// triangles filled. One Cholesky factorization gives it: with P the
// permutation that reverses the order and P·(H + shift·I)·P = L·Lᵀ,
// (H + shift·I)⁻¹ = (P·L⁻¹·P)ᵀ (P·L⁻¹·P), and P·L⁻¹·P is upper triangular,
// so it is U: a Cholesky and a triangular inverse, half the work of
// inverting H and factoring the inverse. L⁻¹ is solved in column panels on
// the OpenMP threads; each panel's values do not depend on which thread
// solves it, so U is the same on any number of threads.
// not_positive_definite: the factorization failed or U's diagonal is not
// finite and positive (u then holds no factor).
FactorOutcome inverse_cholesky_upper(const float* h, int64_t n, float shift, float* u,
                                     IsaLevel level = best_isa_level());

// c -= a·b for c: [m, n], a: [m, k], b: [k, n], all column-major with
// leading dimensions ldc, lda, ldb (blocks of larger matrices), in panels of
// c's columns on the OpenMP threads: the same bits on any number of threads.
// False when memory for the product's buffers ran out (c then partly
// updated).
bool subtract_product(float* c, int64_t ldc, const float* a, int64_t lda, const float* b, int64_t ldb, int64_t m,
                      int64_t n, int64_t k, IsaLevel level = best_isa_level());

}  // namespace tessera::ggml
