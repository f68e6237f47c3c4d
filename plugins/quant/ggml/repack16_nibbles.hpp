// repack16_nibbles.hpp: reading the 16-row block layouts (blocks.hpp:
// BlockQ4_0x16 .. BlockQ8_0x16Pair) into 512-bit registers, shared by their
// VNNI group kernels (kernels_repack16_impl.hpp) and their AMX panels
// (repack16_panels_amx.cpp), whose results must be the same bits.
// Included inside an anonymous namespace of files compiled for avx512_vnni
// or above, after <immintrin.h> and blocks.hpp, so that nothing here is a
// weak symbol of a wide object (docs/kernels.md).
#pragma once

// A block's 16 row scales (f16) as f32.
[[gnu::always_inline]] inline __m512 scales16(const uint16_t* h) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h)));
}

// Chunk k of a 16-row nibble block (the 64 bytes at qs + 64 k) as bytes:
// lo the quants 4k..4k+3 of each row, hi the quants 16 + 4k..; with
// kHighBits, Q5's fifth bits ORed in from the block's byte masks qh.
template <bool kHighBits>
[[gnu::always_inline]] inline void split_nibbles(const uint8_t* qs, const uint64_t* qh, int k, __m512i& lo,
                                                 __m512i& hi) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i v = _mm512_loadu_si512(qs + 64 * k);
  lo = _mm512_and_si512(v, low4);
  hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
  if constexpr (kHighBits) {
    const __m512i bit4 = _mm512_set1_epi8(0x10);
    lo = _mm512_or_si512(lo, _mm512_maskz_mov_epi8(qh[k], bit4));
    hi = _mm512_or_si512(hi, _mm512_maskz_mov_epi8(qh[4 + k], bit4));
  }
}

// Q5's fifth-bit masks of block b of a 16-row group, or nullptr for the
// layouts without them.
template <typename Group, bool kHighBits>
[[gnu::always_inline]] inline const uint64_t* fifth_bit_masks(const void* group, int64_t b) {
  if constexpr (kHighBits) return tessera::ggml::GroupBlocks<Group>::block(group, b).qh;
  return nullptr;
}
