// ssm_kernels.hpp: the per-instruction-set-level variants of the recurrent
// kernels (ssm_kernels.cpp and ssd_kernels.cpp compile one per level;
// ssm.cpp picks the CPU's, ssm_test.cpp tests every one). Same contracts as
// ssm.hpp's functions.
#pragma once

#include "ssm.hpp"
#include "tessera/isa.hpp"

namespace tessera::mamba {

TESSERA_ISA_DECLARE(void causal_conv_silu_kernel(Rows in, MutableRows out, int64_t n, int64_t channels, int64_t d_conv,
                                                 const float* weight, const float* bias, float* window, int64_t c0,
                                                 int64_t c1))
TESSERA_ISA_DECLARE(void softplus_kernel(float* v, int64_t n))
TESSERA_ISA_DECLARE(void mamba1_scan_kernel(const Mamba1Scan& s, int64_t n, int64_t c0, int64_t c1))
TESSERA_ISA_DECLARE(void mamba2_scan_kernel(const Mamba2Scan& s, int64_t n, int64_t h0, int64_t h1))
TESSERA_ISA_DECLARE(void mamba2_chunked_scan_kernel(const Mamba2Scan& s, int64_t n_chunks, int64_t h0, int64_t h1))

}  // namespace tessera::mamba
