// tessera/half.hpp: IEEE half (f16) and bfloat16 conversions, exact and portable.
#pragma once

#include <bit>
#include <cstdint>

#if defined(__F16C__) && defined(__AVX__)
#include <immintrin.h>
#endif

namespace tessera {

// f16 bits -> f32, exact for every input (subnormals, inf, NaN included).
constexpr float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + (127 - 15)) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

// f32 -> f16 bits, round to nearest even; overflow -> inf; NaN stays NaN.
constexpr uint16_t f32_to_f16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504
  if (abs < 0x38800000u) {                                               // result is subnormal or zero
    const uint32_t shift = 126 - (abs >> 23);                            // 14..
    if (shift > 24) return static_cast<uint16_t>(sign);
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t half = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t mid = 1u << (shift - 1);
    const uint32_t rounded = half + ((rem > mid || (rem == mid && (half & 1))) ? 1 : 0);
    return static_cast<uint16_t>(sign | rounded);
  }
  const uint32_t rebias = abs - (112u << 23);  // exponent 127 -> 15
  const uint32_t half = rebias >> 13;
  const uint32_t rem = rebias & 0x1fffu;
  const uint32_t rounded = half + ((rem > 0x1000u || (rem == 0x1000u && (half & 1))) ? 1 : 0);
  return static_cast<uint16_t>(sign | rounded);
}

constexpr float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

// f32 -> bf16 bits, round to nearest even; NaN stays NaN.
constexpr uint16_t f32_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// Bulk conversions, exact, for any file.
inline void f16_to_f32_n(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}
inline void f32_to_f16_n(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

#if defined(__F16C__) && defined(__AVX__)
// The same with F16C's vcvtph2ps/vcvtps2ph, 8 values an instruction, for
// files compiled for a level that has it (avx2 and above: tessera/isa.hpp).
// Both round f32 -> f16 to nearest even, so both give identical bits. Only
// such files see these, so no file compiled for the baseline can call them.
namespace f16c {
inline void f16_to_f32_n(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  for (; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}
inline void f32_to_f16_n(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}
}  // namespace f16c
#endif

}  // namespace tessera
