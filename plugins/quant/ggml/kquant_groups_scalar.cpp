// kquant_groups_scalar.cpp: the reference kernels of the repacked K-quant
// groups, read element by element from the layouts of blocks.hpp. The f32
// steps are the ones every level takes (KQuantGroupFn), so the SIMD levels
// must give these bits exactly.
#include <cmath>

#include "kquant_groups.hpp"
#include "tessera/half.hpp"

namespace tessera::ggml {

namespace {

// Quant of row r, chunk t, element i of run j: the low (high = false) or
// high nibble, and for Q5_K bit t (or 4 + t) of qh[j][4r + i] as bit 4.
int k4_quant(const BlockQ4Kx8& w, int j, int t, int r, int i, bool high) {
  const uint8_t byte = w.qs[j][t][4 * r + i];
  return high ? byte >> 4 : byte & 0x0F;
}
int k4_quant(const BlockQ5Kx8& w, int j, int t, int r, int i, bool high) {
  const uint8_t byte = w.qs[j][t][4 * r + i];
  const int fifth = (w.qh[j][4 * r + i] >> (high ? 4 + t : t)) & 1;
  return (high ? byte >> 4 : byte & 0x0F) | fifth << 4;
}

// Q4_K and Q5_K: x = d * sc * q - dmin * mn per run of 32.
template <typename Group>
void k4_groups(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
               size_t y_stride) {
  const auto* g = static_cast<const Group*>(group);
  for (int xi = 0; xi < nx; ++xi) {
    float acc[kRepackRows] = {};
    for (int64_t b = 0; b < nb; ++b) {
      const Group& w = g[b];
      const BlockQ8K& xb = x[xi * x_row_blocks + b];
      for (int r = 0; r < kRepackRows; ++r) {
        int32_t isum = 0, msum = 0;
        for (int j = 0; j < 8; ++j) {
          int32_t s = 0;
          for (int t = 0; t < 4; ++t) {
            for (int i = 0; i < 4; ++i) {
              s += k4_quant(w, j, t, r, i, false) * xb.qs[32 * j + 4 * t + i] +
                   k4_quant(w, j, t, r, i, true) * xb.qs[32 * j + 16 + 4 * t + i];
            }
          }
          isum += w.scales[j][r] * s;
          msum += w.mins[j][r] * (xb.bsums[2 * j] + xb.bsums[2 * j + 1]);
        }
        acc[r] = std::fma(f16_to_f32(w.d[r]) * xb.d, static_cast<float>(isum), acc[r]);
        acc[r] = std::fma(-(f16_to_f32(w.dmin[r]) * xb.d), static_cast<float>(msum), acc[r]);
      }
    }
    for (int r = 0; r < kRepackRows; ++r) y[xi * y_stride + r] = acc[r];
  }
}

}  // namespace

void q4_kx8_scalar(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                   size_t y_stride) {
  k4_groups<BlockQ4Kx8>(group, nb, x, x_row_blocks, nx, y, y_stride);
}

void q5_kx8_scalar(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                   size_t y_stride) {
  k4_groups<BlockQ5Kx8>(group, nb, x, x_row_blocks, nx, y, y_stride);
}

void q6_kx8_scalar(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                   size_t y_stride) {
  const auto* g = static_cast<const BlockQ6Kx8*>(group);
  for (int xi = 0; xi < nx; ++xi) {
    float acc[kRepackRows] = {};
    for (int64_t b = 0; b < nb; ++b) {
      const BlockQ6Kx8& w = g[b];
      const BlockQ8K& xb = x[xi * x_row_blocks + b];
      for (int r = 0; r < kRepackRows; ++r) {
        int32_t isum = 0, offset = 0;  // w = d * sc * (q - 32): isum - 32 * offset
        for (int j = 0; j < 8; ++j) {
          int32_t sa = 0, sb = 0;  // sub-blocks 2j and 2j + 1
          for (int t = 0; t < 4; ++t) {
            const int v = t % 2;
            for (int i = 0; i < 4; ++i) {
              const uint8_t low = w.ql[j][t][4 * r + i], high = w.qh[j][t / 2][4 * r + i];
              const int qa = (low & 0x0F) | ((high >> (2 * v)) & 3) << 4;
              const int qb = (low >> 4) | ((high >> (4 + 2 * v)) & 3) << 4;
              sa += qa * xb.qs[32 * j + 4 * t + i];
              sb += qb * xb.qs[32 * j + 16 + 4 * t + i];
            }
          }
          const int sc_a = w.scales[j][r][0], sc_b = w.scales[j][r][1];
          isum += sc_a * sa + sc_b * sb;
          offset += sc_a * xb.bsums[2 * j] + sc_b * xb.bsums[2 * j + 1];
        }
        acc[r] = std::fma(f16_to_f32(w.d[r]) * xb.d, static_cast<float>(isum - 32 * offset), acc[r]);
      }
    }
    for (int r = 0; r < kRepackRows; ++r) y[xi * y_stride + r] = acc[r];
  }
}

// Q2_K: w = d * (sc & 15) * q - dmin * (sc >> 4) per sub-block of 16; Q3_K:
// w = d * sc * (q - 4) with q = the two low bits | the third bit << 2, folded
// as isum - 4 * offset (Q6_K's way).
void q2_kx8_scalar(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                   size_t y_stride) {
  const auto* g = static_cast<const BlockQ2Kx8*>(group);
  for (int xi = 0; xi < nx; ++xi) {
    float acc[kRepackRows] = {};
    for (int64_t b = 0; b < nb; ++b) {
      const BlockQ2Kx8& w = g[b];
      const BlockQ8K& xb = x[xi * x_row_blocks + b];
      for (int r = 0; r < kRepackRows; ++r) {
        int32_t isum = 0, msum = 0;
        for (int s = 0; s < 16; ++s) {
          int32_t sum = 0;
          for (int t = 0; t < 4; ++t) {
            for (int i = 0; i < 4; ++i) sum += ((w.qs[s][4 * r + i] >> (2 * t)) & 3) * xb.qs[16 * s + 4 * t + i];
          }
          const uint8_t scale = w.scales[s / 2][r][s % 2];
          isum += (scale & 0x0F) * sum;
          msum += (scale >> 4) * xb.bsums[s];
        }
        acc[r] = std::fma(f16_to_f32(w.d[r]) * xb.d, static_cast<float>(isum), acc[r]);
        acc[r] = std::fma(-(f16_to_f32(w.dmin[r]) * xb.d), static_cast<float>(msum), acc[r]);
      }
    }
    for (int r = 0; r < kRepackRows; ++r) y[xi * y_stride + r] = acc[r];
  }
}

void q3_kx8_scalar(const void* group, int64_t nb, const BlockQ8K* x, size_t x_row_blocks, int nx, float* y,
                   size_t y_stride) {
  const auto* g = static_cast<const BlockQ3Kx8*>(group);
  for (int xi = 0; xi < nx; ++xi) {
    float acc[kRepackRows] = {};
    for (int64_t b = 0; b < nb; ++b) {
      const BlockQ3Kx8& w = g[b];
      const BlockQ8K& xb = x[xi * x_row_blocks + b];
      for (int r = 0; r < kRepackRows; ++r) {
        int32_t isum = 0, offset = 0;
        for (int s = 0; s < 16; ++s) {
          int32_t sum = 0;
          for (int t = 0; t < 4; ++t) {
            for (int i = 0; i < 4; ++i) {
              const int low = (w.qs[s][4 * r + i] >> (2 * t)) & 3;
              const int third = (w.hmask[s / 2][4 * r + i] >> (4 * (s % 2) + t)) & 1;
              sum += (low | third << 2) * xb.qs[16 * s + 4 * t + i];
            }
          }
          const int scale = w.scales[s / 2][r][s % 2];
          isum += scale * sum;
          offset += scale * xb.bsums[s];
        }
        acc[r] = std::fma(f16_to_f32(w.d[r]) * xb.d, static_cast<float>(isum - 4 * offset), acc[r]);
      }
    }
    for (int r = 0; r < kRepackRows; ++r) y[xi * y_stride + r] = acc[r];
  }
}

}  // namespace tessera::ggml
