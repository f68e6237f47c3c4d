// int8_peak_avx2.cpp: the AVX2 kernels' product (int8_peak.hpp): vpmaddubsw
// sums u8 x i8 pairs into i16, vpmaddwd by ones widens them to i32, vpaddd
// accumulates.
#include <immintrin.h>

#include "int8_peak.hpp"

namespace tessera::ggml {

int64_t int8_peak_avx2(int64_t rounds) {
  // Only the adds chain from round to round (1 cycle), so four chains keep
  // the products' ports busy; named rather than an array, which the
  // compiler would keep in memory, and few enough for AVX2's 16 registers.
  const __m256i s = _mm256_set1_epi8(-5);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  __m256i p0 = _mm256_set1_epi8(3), p1 = p0, p2 = p0, p3 = p0;
  for (int64_t r = 0; r < rounds; ++r) {
    // The weights (p) may have changed, as far as the compiler knows: a new product each round.
    asm volatile("" : "+x"(p0), "+x"(p1), "+x"(p2), "+x"(p3));
    a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_maddubs_epi16(p0, s), ones));
    a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_maddubs_epi16(p1, s), ones));
    a2 = _mm256_add_epi32(a2, _mm256_madd_epi16(_mm256_maddubs_epi16(p2, s), ones));
    a3 = _mm256_add_epi32(a3, _mm256_madd_epi16(_mm256_maddubs_epi16(p3, s), ones));
  }
  volatile int sink = _mm256_extract_epi32(_mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3)), 0);
  (void)sink;
  return rounds * 4 * 32;
}

}  // namespace tessera::ggml
