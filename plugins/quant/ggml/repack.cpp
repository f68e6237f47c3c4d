// repack.cpp: interleave 8 rows of ggml blocks (layouts described in blocks.hpp).
#include "repack.hpp"

#include <cstring>

namespace tessera::ggml {

void repack_q4_1x8(const BlockQ4_1* src, int64_t rows, int64_t nb, BlockQ4_1x8* dst) {
  for (int64_t g = 0; g < rows / kRepackRows; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      BlockQ4_1x8& out = dst[g * nb + b];
      for (int r = 0; r < kRepackRows; ++r) {
        const BlockQ4_1& in = src[(g * kRepackRows + r) * nb + b];
        out.d[r] = in.d;
        out.m[r] = in.m;
        for (int k = 0; k < 4; ++k) std::memcpy(out.qs + 32 * k + 4 * r, in.qs + 4 * k, 4);
      }
    }
  }
}

void repack_q8_0x8(const BlockQ8_0* src, int64_t rows, int64_t nb, BlockQ8_0x8* dst) {
  for (int64_t g = 0; g < rows / kRepackRows; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      BlockQ8_0x8& out = dst[g * nb + b];
      for (int r = 0; r < kRepackRows; ++r) {
        const BlockQ8_0& in = src[(g * kRepackRows + r) * nb + b];
        out.d[r] = in.d;
        for (int k = 0; k < 8; ++k) std::memcpy(out.qs + 32 * k + 4 * r, in.qs + 4 * k, 4);
      }
    }
  }
}

}  // namespace tessera::ggml
