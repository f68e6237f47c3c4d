// device_math.cuh: the small device functions more than one kernel file
// shares, so that a fused kernel computes exactly what the unfused chain
// does (same expressions, same rounding).
#pragma once

#include <cuda_runtime.h>

namespace tessera::transformer::cuda {

// The sum of v over the warp's 32 lanes, in every lane (butterfly order).
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// SwiGLU of one gate and up value: silu(g) * u.
__device__ __forceinline__ float swiglu_value(float g, float u) { return g / (1.0f + expf(-g)) * u; }

// One RoPE rotation of the pair (a, b) by the angle whose cosine and sine
// are c and s. The FMAs are written out so that every kernel rounds alike,
// whatever contractions the compiler would choose in each.
__device__ __forceinline__ void rotate_pair(float& a, float& b, float c, float s) {
  const float ra = fmaf(a, c, -(b * s)), rb = fmaf(a, s, b * c);
  a = ra;
  b = rb;
}

}  // namespace tessera::transformer::cuda
