// tessera/fast_exp.hpp: exp(x) for x <= 0 as plain arithmetic, so loops over it
// vectorize without -ffast-math (glibc's expf is a call per element).
//
// Cephes-style: x = n ln2 + r with |r| <= ln2 / 2, exp(r) by a degree-6
// polynomial, 2^n put straight into the exponent bits. x <= 0 lets n be found
// by truncation (round half away from zero for negative values), which
// vectorizes even on baseline SSE2. Within 2e-7 relative of std::exp down to
// x = -87 (tests/sdk/fast_exp_test.cpp); smaller x give about 1e-38 instead of
// 0; NaN stays NaN. Used by online softmaxes (every exponent is score - max).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>

namespace tessera {

// The constants of exp_nonpositive, for SIMD versions of it written with
// intrinsics (plugins/attention/paged/paged_block_ops_x86.cpp): one set, so
// the vector and scalar results cannot drift apart.
namespace fast_exp {
inline constexpr float kMinArg = -87.0f;  // keeps 2^n normal
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f;  // ln 2 split so n * kLn2Hi is exact
inline constexpr float kLn2Lo = -2.12194440e-4f;
// exp(r) ~ 1 + r + r^2 * p(r), p's coefficients from the highest degree down.
inline constexpr float kPoly[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                   4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
}  // namespace fast_exp

// Always inlined: the kernels built for each instruction-set level call it,
// and an out-of-line copy would be shared between levels (docs/kernels.md,
// "Instruction sets"; GCC does not always inline it by itself).
[[gnu::always_inline]] inline float exp_nonpositive(float x) {
  using namespace fast_exp;
  x = std::max(x, kMinArg);  // NaN passes through (max returns its first argument)
  // t <= -0.5 for every x <= 0. NaN (and a positive x, outside the domain)
  // would convert to no integer, which is undefined behaviour: min gives 0
  // for them (NaN < 0 is false), and r below carries a NaN to the result.
  const float t = x * kLog2e - 0.5f;
  const int32_t n = static_cast<int32_t>(std::min(0.0f, t));
  const float fn = static_cast<float>(n);
  const float r = x - fn * kLn2Hi - fn * kLn2Lo;
  float p = kPoly[0];
  p = p * r + kPoly[1];
  p = p * r + kPoly[2];
  p = p * r + kPoly[3];
  p = p * r + kPoly[4];
  p = p * r + kPoly[5];
  const float e_r = p * r * r + r + 1.0f;
  const float scale = std::bit_cast<float>((n + 127) << 23);  // 2^n
  return e_r * scale;
}

}  // namespace tessera
