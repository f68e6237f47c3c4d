#pragma once
// The products with H, the Gram matrix of a Linear's calibration inputs,
// which GPTQ and AWQ weigh errors by (weight_quantizer.cpp, grid_quantize.cpp):
// H += Xᵀ·X (with a 4864-wide input, Qwen2.5's down projection, over 65,536
// calibration rows, 1.5 T multiply-adds a layer, most of a calibration's
// time), and tr(M·H·Mᵀ), the output energy of a weight or of its error, which
// AWQ's searches evaluate for every candidate.
//
// Eigen's own product kernels, compiled once per instruction-set level
// (hessian_products_rows.cpp) and picked at run time, on OpenMP threads. Not
// OpenBLAS: its kernel set is fixed when it loads, and where the machine pins
// it to AVX2 (OPENBLAS_CORETYPE=Haswell, which this project's machines set on
// CPUs whose AVX-512 kernels older OpenBLAS builds get wrong) X·Xᵀ ran at
// half of what Eigen's AVX-512 kernels give on the same two cores (183-202
// against 398 GFLOP/s on a Zen 5), and OpenBLAS's own threads, yielding
// beside OpenMP's, took about a fifth of an AWQ run.
#include <cstdint>
#include <optional>

#include "tessera/isa.hpp"

namespace tessera::ggml {

// h: [cols, cols] column-major; its lower triangle (diagonal included) gains
// Σ_r x_r x_rᵀ over the rows of x: [rows, cols] row-major. The strictly upper
// triangle is left as it was except inside the diagonal blocks of the panels
// the work is split into, where it gains the same sums (H is symmetric; the
// caller reads the lower triangle). The sums are the same for any number of
// threads: each panel's products do not depend on which thread computes them.
// False when memory for the products' buffers ran out (H then holds part of
// the sums).
bool add_gram(const float* x, int64_t rows, int64_t cols, float* h, IsaLevel level = best_isa_level());

// tr(M·H·Mᵀ) = Σ_r m_r·H·m_rᵀ for m: [rows, cols] row-major and h: [cols,
// cols] with both triangles filled, summed in double over blocks of rows in
// a fixed order (the same value on any number of threads). nullopt when
// memory for the products ran out.
std::optional<double> hessian_quadratic(const float* m, int64_t rows, int64_t cols, const float* h,
                                        IsaLevel level = best_isa_level());

}  // namespace tessera::ggml
