// w8a8_kernels_avx512vnni.cpp: the panel dot on AVX-512 VNNI. vpdpbusd
// multiplies unsigned by signed bytes, so the activations go in as x + 128
// (x xor 0x80) and 128 * (the row's sum of weights) comes back out at the
// end. The sums wrap modulo 2^32 on the way, and the difference is the exact
// product sum, which fits i32 (kMaxInFeatures).
#include <immintrin.h>

#include <cstring>

#include "w8a8_kernels.hpp"
#include "w8a8_layout.hpp"

namespace tessera::int8 {
namespace {

template <int NX>
void dot_rows(const int8_t* panel, const int32_t* row_sums, int64_t k_chunks, const int8_t* x, size_t x_stride,
              int32_t* acc) {
  __m512i sum[NX];
  for (int xi = 0; xi < NX; ++xi) sum[xi] = _mm512_setzero_si512();
  for (int64_t c = 0; c < k_chunks; ++c) {
    const int8_t* chunk = panel + static_cast<size_t>(c) * kChunkBytes;
    if (c + 4 < k_chunks) {  // four chunks ahead, within the panel
      _mm_prefetch(reinterpret_cast<const char*>(chunk + 4 * kChunkBytes), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(chunk + 4 * kChunkBytes + 512), _MM_HINT_T0);
    }
    for (int j = 0; j < kChunk / 4; ++j) {
      const __m512i w = _mm512_loadu_si512(chunk + j * 64);
      for (int xi = 0; xi < NX; ++xi) {
        uint32_t four;
        std::memcpy(&four, x + static_cast<size_t>(xi) * x_stride + c * kChunk + j * 4, 4);
        sum[xi] = _mm512_dpbusd_epi32(sum[xi], _mm512_set1_epi32(static_cast<int>(four ^ 0x80808080u)), w);
      }
    }
  }
  const __m512i offset = _mm512_slli_epi32(_mm512_loadu_si512(row_sums), 7);
  for (int xi = 0; xi < NX; ++xi) _mm512_storeu_si512(acc + xi * kPanelRows, _mm512_sub_epi32(sum[xi], offset));
}

void panel_dot_vnni(const int8_t* panel, const int32_t* row_sums, int64_t k_chunks, const int8_t* x, size_t x_stride,
                    int nx, int32_t* acc) {
  switch (nx) {
    case 1: return dot_rows<1>(panel, row_sums, k_chunks, x, x_stride, acc);
    case 2: return dot_rows<2>(panel, row_sums, k_chunks, x, x_stride, acc);
    case 3: return dot_rows<3>(panel, row_sums, k_chunks, x, x_stride, acc);
    default: return dot_rows<4>(panel, row_sums, k_chunks, x, x_stride, acc);
  }
}

}  // namespace

const KernelTable& avx512_vnni_kernels() {
  static const KernelTable table{IsaLevel::avx512_vnni, "avx512_vnni", &panel_dot_vnni, nullptr};
  return table;
}

}  // namespace tessera::int8
