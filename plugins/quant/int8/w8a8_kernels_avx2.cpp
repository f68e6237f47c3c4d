// w8a8_kernels_avx2.cpp: the panel dot on AVX2. vpmaddubsw multiplies
// unsigned by signed bytes, so each product is taken as |x| * (w with x's
// sign): |x| <= 127 and |w| <= 127 keep the pair sums within i16
// (2 * 127 * 127 = 32258); vpmaddwd by ones widens them to i32.
#include <immintrin.h>

#include <cstring>

#include "w8a8_kernels.hpp"
#include "w8a8_layout.hpp"

namespace tessera::int8 {
namespace {

template <int NX>
void dot_rows(const int8_t* panel, int64_t k_chunks, const int8_t* x, size_t x_stride, int32_t* acc) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i lo[NX], hi[NX];  // rows 0-7 and 8-15 of each activation row
  for (int xi = 0; xi < NX; ++xi) lo[xi] = hi[xi] = _mm256_setzero_si256();
  for (int64_t c = 0; c < k_chunks; ++c) {
    const int8_t* chunk = panel + static_cast<size_t>(c) * kChunkBytes;
    for (int j = 0; j < kChunk / 4; ++j) {
      const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(chunk + j * 64));
      const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(chunk + j * 64 + 32));
      for (int xi = 0; xi < NX; ++xi) {
        int32_t four;
        std::memcpy(&four, x + static_cast<size_t>(xi) * x_stride + c * kChunk + j * 4, 4);
        const __m256i xb = _mm256_set1_epi32(four);
        const __m256i ax = _mm256_abs_epi8(xb);
        lo[xi] = _mm256_add_epi32(lo[xi], _mm256_madd_epi16(_mm256_maddubs_epi16(ax, _mm256_sign_epi8(w0, xb)), ones));
        hi[xi] = _mm256_add_epi32(hi[xi], _mm256_madd_epi16(_mm256_maddubs_epi16(ax, _mm256_sign_epi8(w1, xb)), ones));
      }
    }
  }
  for (int xi = 0; xi < NX; ++xi) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + xi * kPanelRows), lo[xi]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + xi * kPanelRows + 8), hi[xi]);
  }
}

void panel_dot_avx2(const int8_t* panel, const int32_t* /*row_sums*/, int64_t k_chunks, const int8_t* x,
                    size_t x_stride, int nx, int32_t* acc) {
  switch (nx) {
    case 1: return dot_rows<1>(panel, k_chunks, x, x_stride, acc);
    case 2: return dot_rows<2>(panel, k_chunks, x, x_stride, acc);
    case 3: return dot_rows<3>(panel, k_chunks, x, x_stride, acc);
    default: return dot_rows<4>(panel, k_chunks, x, x_stride, acc);
  }
}

}  // namespace

const KernelTable& avx2_kernels() {
  static const KernelTable table{IsaLevel::avx2, "avx2", &panel_dot_avx2, nullptr};
  return table;
}

}  // namespace tessera::int8
