#include "ssm.hpp"

#include <cstring>

#include "ssm_kernels.hpp"
#include "tessera/blocks/elementwise.hpp"
#include "tessera/blocks/silu.hpp"

namespace tessera::mamba {

void causal_conv_silu(Rows in, MutableRows out, int64_t n, int64_t channels, int64_t d_conv, const float* weight,
                      const float* bias, float* window, int64_t c0, int64_t c1) {
  using Kernel =
      void (*)(Rows, MutableRows, int64_t, int64_t, int64_t, const float*, const float*, float*, int64_t, int64_t);
  static const Kernel kernel = isa_select<Kernel>(TESSERA_ISA_TABLE(causal_conv_silu_kernel));
  kernel(in, out, n, channels, d_conv, weight, bias, window, c0, c1);
}

void softplus_in_place(float* dt, int64_t n) {
  using Kernel = void (*)(float*, int64_t);
  static const Kernel kernel = isa_select<Kernel>(TESSERA_ISA_TABLE(softplus_kernel));
  kernel(dt, n);
}

void mamba1_scan(const Mamba1Scan& s, int64_t n, int64_t c0, int64_t c1) {
  using Kernel = void (*)(const Mamba1Scan&, int64_t, int64_t, int64_t);
  static const Kernel kernel = isa_select<Kernel>(TESSERA_ISA_TABLE(mamba1_scan_kernel));
  kernel(s, n, c0, c1);
}

void mamba2_scan(const Mamba2Scan& s, int64_t n, int64_t h0, int64_t h1) {
  using Kernel = void (*)(const Mamba2Scan&, int64_t, int64_t, int64_t);
  static const Kernel kernel = isa_select<Kernel>(TESSERA_ISA_TABLE(mamba2_scan_kernel));
  kernel(s, n, h0, h1);
}

void mamba2_chunked_scan(const Mamba2Scan& s, int64_t n_chunks, int64_t h0, int64_t h1) {
  using Kernel = void (*)(const Mamba2Scan&, int64_t, int64_t, int64_t);
  static const Kernel kernel = isa_select<Kernel>(TESSERA_ISA_TABLE(mamba2_chunked_scan_kernel));
  kernel(s, n_chunks, h0, h1);
}

void gate_row(float* y, float* z, int64_t width) {
  blocks::silu_mul(z, y, width);  // z = silu(z) * y
  std::memcpy(y, z, static_cast<size_t>(width) * sizeof(float));
}

void gated_group_rms_norm(float* y, float* z, const float* weight, int64_t width, int64_t n_group, float eps) {
  blocks::silu_mul(z, y, width);  // z = silu(z) * y
  const int64_t group = width / n_group;
  for (int64_t g = 0; g < n_group; ++g)
    blocks::rms_norm_rows(z + g * group, weight + g * group, y + g * group, 1, group, eps);
}

}  // namespace tessera::mamba
