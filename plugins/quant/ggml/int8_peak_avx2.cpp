// int8_peak_avx2.cpp: the AVX2 kernels' product (int8_peak.hpp): vpmaddubsw
// sums u8 x i8 pairs into i16, vpmaddwd by ones widens them to i32, vpaddd
// accumulates.
#include <immintrin.h>

#include <cstdint>

#include "int8_peak.hpp"

namespace tessera::ggml {

int64_t int8_peak_avx2(int64_t rounds) {
  // The weights come from a 1 KiB ring in L1 (loads have ports of their own,
  // as in the kernels), so each round's products are new and cannot be
  // hoisted; only the adds chain from round to round (1 cycle), so four
  // chains keep the products' ports busy. Named, not an array, which the
  // compiler would keep in memory.
  alignas(32) static uint8_t ring[32][32];
  for (int i = 0; i < 32; ++i)
    for (int j = 0; j < 32; ++j) ring[i][j] = static_cast<uint8_t>(i + j);
  const __m256i s = _mm256_set1_epi8(-5);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t r = 0; r < rounds; ++r) {
    const auto* w = reinterpret_cast<const __m256i*>(ring[(4 * r) & 31]);
    a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_load_si256(w), s), ones));
    a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_load_si256(w + 1), s), ones));
    a2 = _mm256_add_epi32(a2, _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_load_si256(w + 2), s), ones));
    a3 = _mm256_add_epi32(a3, _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_load_si256(w + 3), s), ones));
  }
  volatile int sink = _mm256_extract_epi32(_mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3)), 0);
  (void)sink;
  return rounds * 4 * 32;
}

}  // namespace tessera::ggml
