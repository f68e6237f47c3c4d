// tessera/blocks/silu.hpp: the SwiGLU gate, gate = silu(gate) * up, vectorized while giving
// the same floats as the plain `g / (1 + std::exp(-g)) * u`.
//
// Why not a fast float exp: the model amplifies any change of rounding (one
// 8-bit activation step moves the logits as much as the KV precision does,
// docs/transformer.md), so the golden comparison with llama.cpp would move.
// exp_for_float evaluates exp in double; rounded to float it is expf's
// correctly rounded answer for all but ~3 in 100000 arguments (1 ulp then).
#pragma once

#include <bit>
#include <cstdint>

namespace tessera::blocks {

// exp(x) for x converted from a float, accurate to a few double ulps (the
// degree-11 Taylor polynomial on |r| <= ln2/2 leaves < 1e-14 relative).
// Arguments are clamped to [-150, 100]: beyond, the float result is 0 or inf
// either way. NaN stays NaN. Branch-free, so an `omp simd` loop vectorizes it.
inline double exp_for_float(double x) {
  x = x < -150.0 ? -150.0 : x;
  x = x > 100.0 ? 100.0 : x;
  // n = round(x / ln2) by the 1.5 * 2^52 shifter: n then sits in t's low bits.
  constexpr double kShifter = 0x1.8p52;
  const double t = x * 0x1.71547652b82fep0 + kShifter;  // x * log2(e)
  const double n = t - kShifter;
  // r = x - n ln2 in two steps (Cody-Waite): n * kLn2Hi is exact for |n| < 2^11.
  constexpr double kLn2Hi = 0x1.62e42fee00000p-1;
  constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;
  const double r = (x - n * kLn2Hi) - n * kLn2Lo;
  double p = 1.0 / 39916800.0;  // 1/11!
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  // 2^n: n + 1023 in the exponent field (n is within [-217, 145] here).
  const uint64_t two_to_n = (std::bit_cast<uint64_t>(t) + 1023) << 52;
  return p * std::bit_cast<double>(two_to_n);
}

// gate[i] = gate[i] / (1 + exp(-gate[i])) * up[i] for i < n, in float but for
// the exp; compiled once per instruction-set level (silu_kernel.cpp), the
// best level chosen once (tessera/isa.hpp).
void silu_mul(float* gate, const float* up, int64_t n);

}  // namespace tessera::blocks
