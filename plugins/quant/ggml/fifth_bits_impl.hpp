// fifth_bits_impl.hpp: 32 bits of a Q5_0/Q5_1 mask -> 0x10 in each byte of a
// ymm register whose bit is set (bit j -> byte j). Included inside the
// anonymous namespace of each SIMD translation unit (kernels_avx2.cpp,
// kernels_avx512_impl.hpp), so each keeps its own copy built with its flags;
// kernels_repack_impl.hpp and the AVX2 Q5 tiles use it.
#pragma once

// AVX-512BW/VL: one masked move. AVX2: byte j takes mask byte j / 8, then
// keeps bit j % 8 of it.
inline __m256i fifth_bits(uint32_t mask) {
#if defined(__AVX512BW__) && defined(__AVX512VL__)
  return _mm256_maskz_mov_epi8(mask, _mm256_set1_epi8(0x10));
#else
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(mask)),
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ULL));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(0x10));
#endif
}
