// int8_peak_avx512vnni.cpp: the VNNI kernels' product (int8_peak.hpp):
// vpdpbusd sums four u8 x i8 products into each i32 lane.
#include <immintrin.h>

#include "int8_peak.hpp"

namespace tessera::ggml {

int64_t int8_peak_avx512_vnni(int64_t rounds) {
  // 12 chains (~5 cycles of latency each, up to 2 products a cycle), named
  // rather than an array, which the compiler would keep in memory.
  const __m512i u = _mm512_set1_epi8(3);
  const __m512i s = _mm512_set1_epi8(-5);
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0;
  __m512i a6 = a0, a7 = a0, a8 = a0, a9 = a0, a10 = a0, a11 = a0;
  for (int64_t r = 0; r < rounds; ++r) {
    a0 = _mm512_dpbusd_epi32(a0, u, s);
    a1 = _mm512_dpbusd_epi32(a1, u, s);
    a2 = _mm512_dpbusd_epi32(a2, u, s);
    a3 = _mm512_dpbusd_epi32(a3, u, s);
    a4 = _mm512_dpbusd_epi32(a4, u, s);
    a5 = _mm512_dpbusd_epi32(a5, u, s);
    a6 = _mm512_dpbusd_epi32(a6, u, s);
    a7 = _mm512_dpbusd_epi32(a7, u, s);
    a8 = _mm512_dpbusd_epi32(a8, u, s);
    a9 = _mm512_dpbusd_epi32(a9, u, s);
    a10 = _mm512_dpbusd_epi32(a10, u, s);
    a11 = _mm512_dpbusd_epi32(a11, u, s);
    // A new product each round: the operands may have changed, as far as the compiler knows.
    asm volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5));
    asm volatile("" : "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));
  }
  const __m512i sum =
      _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(a0, a1), _mm512_add_epi32(a2, a3)),
                                        _mm512_add_epi32(_mm512_add_epi32(a4, a5), _mm512_add_epi32(a6, a7))),
                       _mm512_add_epi32(_mm512_add_epi32(a8, a9), _mm512_add_epi32(a10, a11)));
  volatile int sink = _mm512_reduce_add_epi32(sum);
  (void)sink;
  return rounds * 12 * 64;
}

}  // namespace tessera::ggml
