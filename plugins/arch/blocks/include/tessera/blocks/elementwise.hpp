// tessera/blocks/elementwise.hpp: the elementwise steps between the matrix products, fused
// where one pass over the data suffices. All buffers are row-major f32.
#pragma once

#include <cstdint>
#include <span>

namespace tessera::blocks {

// out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * weight[:]   for r < n_rows.
// x, out: [n_rows, dim]; weight: [dim]. out may alias x.
void rms_norm_rows(const float* x, const float* weight, float* out, int64_t n_rows, int64_t dim,
                   float eps);

// gate[i] = silu(gate[i]) * up[i] for i < n, silu(g) = g / (1 + exp(-g)).
void swiglu_inplace(float* gate, const float* up, int64_t n);

// acc[i] += delta[i] for i < n (residual connection).
void add_inplace(float* acc, const float* delta, int64_t n);

// dst[i, :] = src[rows[i], :] for i < rows.size(): the rows a forward's last
// layer carries on (those whose logits are asked). src, dst: [*, width],
// not overlapping.
void gather_rows(std::span<const int32_t> rows, const float* src, float* dst, int64_t width);

}  // namespace tessera::blocks
