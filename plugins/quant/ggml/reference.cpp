// reference.cpp: scalar dequantization and quantization of ggml's block formats.
#include "reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "low_bit_kquants.hpp"
#include "tessera/half.hpp"

namespace tessera::ggml {
namespace {

int8_t round_to_i8(float v) { return static_cast<int8_t>(std::nearbyint(v)); }

// One block of 32 for Q4_0/Q5_0: the value of largest magnitude maps to q = 0,
// i.e. to -half * d (ggml's choice), and q = round(x / d) + half clamped to
// [0, 2 half - 1]. Returns d (rounded to f16 only when stored).
float quantize_block_symmetric(const float* x, int half, int* q) {  // q: [32]
  float amax = 0.0f, max = 0.0f;  // largest magnitude, and that value with its sign
  for (int j = 0; j < kBlock; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / static_cast<float>(-half);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < kBlock; ++j) q[j] = std::clamp(static_cast<int>(std::nearbyint(x[j] * id)) + half, 0, 2 * half - 1);
  return d;
}

// One block of 32 for Q4_1/Q5_1: d = (max - min) / top, m = min, q =
// round((x - min) / d) clamped to [0, top].
void quantize_block_min(const float* x, int top, int* q, float* d, float* min) {  // q: [32]
  const auto [lo, hi] = std::minmax_element(x, x + kBlock);
  *min = *lo;
  *d = (*hi - *min) / static_cast<float>(top);
  const float id = *d != 0.0f ? 1.0f / *d : 0.0f;
  for (int j = 0; j < kBlock; ++j) q[j] = std::clamp(static_cast<int>(std::nearbyint((x[j] - *min) * id)), 0, top);
}

// The 5-bit value of element j (0..31) of a Q5_0/Q5_1 block.
int q5_value(const uint8_t* qs, const uint8_t* qh, int j) {
  uint32_t high;
  std::memcpy(&high, qh, sizeof high);
  const int low = j < kBlock / 2 ? qs[j] & 0x0F : qs[j - kBlock / 2] >> 4;
  return low | static_cast<int>(((high >> j) & 1u) << 4);
}

}  // namespace

// Packs 32 values 0..15 into Q4_0/Q4_1 nibbles: element j < 16 low, j + 16 high.
void pack_q4(const int* q, uint8_t* qs) {
  for (int j = 0; j < kBlock / 2; ++j) qs[j] = static_cast<uint8_t>(q[j] | (q[j + kBlock / 2] << 4));
}

// Packs 32 values 0..31 into a Q5_0/Q5_1 block's qs and qh.
void pack_q5(const int* q, uint8_t* qs, uint8_t* qh) {
  uint32_t high = 0;
  for (int j = 0; j < kBlock; ++j) high |= static_cast<uint32_t>(q[j] >> 4) << j;
  for (int j = 0; j < kBlock / 2; ++j) qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[j + kBlock / 2] & 0x0F) << 4));
  std::memcpy(qh, &high, sizeof high);
}

// Sub-blocks 0..3 keep their scale and min in the low 6 bits of bytes j and
// j + 4; sub-blocks 4..7 split theirs into the nibbles of byte j + 4 and the
// top 2 bits of bytes j - 4 (scale) and j (min).
void k4_scale_min(int j, const uint8_t* q, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = q[j] & 63;
    *min = q[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

void pack_k4_scales(const uint8_t* scale, const uint8_t* min, uint8_t* scales) {
  for (int j = 0; j < 4; ++j) {
    scales[j] = static_cast<uint8_t>(scale[j] | ((scale[j + 4] >> 4) << 6));
    scales[j + 4] = static_cast<uint8_t>(min[j] | ((min[j + 4] >> 4) << 6));
    scales[j + 8] = static_cast<uint8_t>((scale[j + 4] & 0x0F) | ((min[j + 4] & 0x0F) << 4));
  }
}

// Layouts as in blocks.hpp and the dequantizers below: Q4_K/Q5_K chunk c of
// 64 elements takes its first 32 from the low nibbles of qs[32c ..], its last
// 32 from the high ones (Q5_K: bit 2c or 2c + 1 of qh[l] on top); Q6_K half h
// of 128 takes quarter k (32 elements) from the low (k < 2) or high nibbles of
// ql[64h + 32 (k & 1) + l] and bits 2k, 2k + 1 of qh[32h + l].
KQuantElement kquant_element(DType type, const void* block, int e) {
  if (type == DType::q6_k) {
    const auto& b = *static_cast<const BlockQ6K*>(block);
    const int h = e / 128, k = (e % 128) / 32, l = e % 32;
    const uint8_t low = b.ql[64 * h + 32 * (k & 1) + l];
    const int q = (k < 2 ? low & 0x0F : low >> 4) | (((b.qh[32 * h + l] >> (2 * k)) & 3) << 4);
    return {q, b.scales[e / 16], 0};
  }
  const uint8_t* scales = type == DType::q4_k ? static_cast<const BlockQ4K*>(block)->scales
                                              : static_cast<const BlockQ5K*>(block)->scales;
  const uint8_t* qs = type == DType::q4_k ? static_cast<const BlockQ4K*>(block)->qs
                                          : static_cast<const BlockQ5K*>(block)->qs;
  const int c = e / 64, i = e % 64, l = i % 32;
  int q = i < 32 ? qs[32 * c + l] & 0x0F : qs[32 * c + l] >> 4;
  if (type == DType::q5_k) q |= ((static_cast<const BlockQ5K*>(block)->qh[l] >> (2 * c + i / 32)) & 1) << 4;
  uint8_t scale, min;
  k4_scale_min(e / 32, scales, &scale, &min);
  return {q, scale, min};
}

void dequantize_row_q4_0(const BlockQ4_0* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kBlock; ++b, y += kBlock) {
    const float d = f16_to_f32(x[b].d);
    for (int j = 0; j < kBlock / 2; ++j) {
      y[j] = d * static_cast<float>((x[b].qs[j] & 0x0F) - 8);
      y[j + kBlock / 2] = d * static_cast<float>((x[b].qs[j] >> 4) - 8);
    }
  }
}

void dequantize_row_q4_1(const BlockQ4_1* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kBlock; ++b, y += kBlock) {
    const float d = f16_to_f32(x[b].d);
    const float m = f16_to_f32(x[b].m);
    for (int j = 0; j < kBlock / 2; ++j) {
      y[j] = d * static_cast<float>(x[b].qs[j] & 0x0F) + m;
      y[j + kBlock / 2] = d * static_cast<float>(x[b].qs[j] >> 4) + m;
    }
  }
}

void dequantize_row_q5_0(const BlockQ5_0* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kBlock; ++b, y += kBlock) {
    const float d = f16_to_f32(x[b].d);
    for (int j = 0; j < kBlock; ++j) y[j] = d * static_cast<float>(q5_value(x[b].qs, x[b].qh, j) - 16);
  }
}

void dequantize_row_q5_1(const BlockQ5_1* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kBlock; ++b, y += kBlock) {
    const float d = f16_to_f32(x[b].d);
    const float m = f16_to_f32(x[b].m);
    for (int j = 0; j < kBlock; ++j) y[j] = d * static_cast<float>(q5_value(x[b].qs, x[b].qh, j)) + m;
  }
}

void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kBlock; ++b, y += kBlock) {
    const float d = f16_to_f32(x[b].d);
    for (int j = 0; j < kBlock; ++j) y[j] = d * static_cast<float>(x[b].qs[j]);
  }
}

void dequantize_row_q8_1(const BlockQ8_1* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kBlock; ++b, y += kBlock) {
    const float d = f16_to_f32(x[b].d);
    for (int j = 0; j < kBlock; ++j) y[j] = d * static_cast<float>(x[b].qs[j]);
  }
}

void dequantize_row_q4_k(const BlockQ4K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    const float d = f16_to_f32(x[b].d);
    const float dmin = f16_to_f32(x[b].dmin);
    const uint8_t* q = x[b].qs;
    for (int chunk = 0; chunk < 4; ++chunk, q += 32) {  // 64 elements per chunk
      uint8_t sc0, mn0, sc1, mn1;
      k4_scale_min(2 * chunk, x[b].scales, &sc0, &mn0);
      k4_scale_min(2 * chunk + 1, x[b].scales, &sc1, &mn1);
      const float d0 = d * sc0, m0 = dmin * mn0, d1 = d * sc1, m1 = dmin * mn1;
      for (int l = 0; l < 32; ++l) *y++ = d0 * static_cast<float>(q[l] & 0x0F) - m0;
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] >> 4) - m1;
    }
  }
}

void dequantize_row_q5_k(const BlockQ5K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    const float d = f16_to_f32(x[b].d);
    const float dmin = f16_to_f32(x[b].dmin);
    const uint8_t* ql = x[b].qs;
    const uint8_t* qh = x[b].qh;
    for (int chunk = 0; chunk < 4; ++chunk, ql += 32) {
      uint8_t sc0, mn0, sc1, mn1;
      k4_scale_min(2 * chunk, x[b].scales, &sc0, &mn0);
      k4_scale_min(2 * chunk + 1, x[b].scales, &sc1, &mn1);
      const float d0 = d * sc0, m0 = dmin * mn0, d1 = d * sc1, m1 = dmin * mn1;
      const uint8_t bit0 = static_cast<uint8_t>(1u << (2 * chunk));
      const uint8_t bit1 = static_cast<uint8_t>(1u << (2 * chunk + 1));
      for (int l = 0; l < 32; ++l)
        *y++ = d0 * static_cast<float>((ql[l] & 0x0F) + ((qh[l] & bit0) ? 16 : 0)) - m0;
      for (int l = 0; l < 32; ++l)
        *y++ = d1 * static_cast<float>((ql[l] >> 4) + ((qh[l] & bit1) ? 16 : 0)) - m1;
    }
  }
}

void dequantize_row_q6_k(const BlockQ6K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    const float d = f16_to_f32(x[b].d);
    const uint8_t* ql = x[b].ql;
    const uint8_t* qh = x[b].qh;
    const int8_t* sc = x[b].scales;
    // Two halves of 128 elements; each uses 64 bytes of ql, 32 of qh, 8 scales.
    for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, y += 128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * sc[is + 0] * static_cast<float>(q1);
        y[l + 32] = d * sc[is + 2] * static_cast<float>(q2);
        y[l + 64] = d * sc[is + 4] * static_cast<float>(q3);
        y[l + 96] = d * sc[is + 6] * static_cast<float>(q4);
      }
    }
  }
}

// Q2_K and Q3_K: low_bit_kquants.hpp holds their one definition.
void dequantize_row_q2_k(const BlockQ2K* x, float* y, int64_t n) { q2_k_rows(x, y, n / kSuperBlock); }
void dequantize_row_q3_k(const BlockQ3K* x, float* y, int64_t n) { q3_k_rows(x, y, n / kSuperBlock); }

void dequantize_row_f16(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f16_to_f32(x[i]);
}

void dequantize_row_bf16(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = bf16_to_f32(x[i]);
}

bool dequantize_row(DType type, const void* x, float* y, int64_t n) {
  switch (type) {
    case DType::f32: std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float)); return true;
    case DType::f16: dequantize_row_f16(static_cast<const uint16_t*>(x), y, n); return true;
    case DType::bf16: dequantize_row_bf16(static_cast<const uint16_t*>(x), y, n); return true;
    case DType::q4_0: dequantize_row_q4_0(static_cast<const BlockQ4_0*>(x), y, n); return true;
    case DType::q4_1: dequantize_row_q4_1(static_cast<const BlockQ4_1*>(x), y, n); return true;
    case DType::q5_0: dequantize_row_q5_0(static_cast<const BlockQ5_0*>(x), y, n); return true;
    case DType::q5_1: dequantize_row_q5_1(static_cast<const BlockQ5_1*>(x), y, n); return true;
    case DType::q8_0: dequantize_row_q8_0(static_cast<const BlockQ8_0*>(x), y, n); return true;
    case DType::q8_1: dequantize_row_q8_1(static_cast<const BlockQ8_1*>(x), y, n); return true;
    case DType::q4_k: dequantize_row_q4_k(static_cast<const BlockQ4K*>(x), y, n); return true;
    case DType::q5_k: dequantize_row_q5_k(static_cast<const BlockQ5K*>(x), y, n); return true;
    case DType::q6_k: dequantize_row_q6_k(static_cast<const BlockQ6K*>(x), y, n); return true;
    case DType::q2_k: dequantize_row_q2_k(static_cast<const BlockQ2K*>(x), y, n); return true;
    case DType::q3_k: dequantize_row_q3_k(static_cast<const BlockQ3K*>(x), y, n); return true;
    default: return false;
  }
}

void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kBlock; ++b, x += kBlock) {
    int q[kBlock];
    y[b].d = f32_to_f16(quantize_block_symmetric(x, 8, q));
    pack_q4(q, y[b].qs);
  }
}

void quantize_row_q4_1(const float* x, BlockQ4_1* y, int64_t n) {
  for (int64_t b = 0; b < n / kBlock; ++b, x += kBlock) {
    int q[kBlock];
    float d, min;
    quantize_block_min(x, 15, q, &d, &min);
    y[b].d = f32_to_f16(d);
    y[b].m = f32_to_f16(min);
    pack_q4(q, y[b].qs);
  }
}

void quantize_row_q5_0(const float* x, BlockQ5_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kBlock; ++b, x += kBlock) {
    int q[kBlock];
    y[b].d = f32_to_f16(quantize_block_symmetric(x, 16, q));
    pack_q5(q, y[b].qs, y[b].qh);
  }
}

void quantize_row_q5_1(const float* x, BlockQ5_1* y, int64_t n) {
  for (int64_t b = 0; b < n / kBlock; ++b, x += kBlock) {
    int q[kBlock];
    float d, min;
    quantize_block_min(x, 31, q, &d, &min);
    y[b].d = f32_to_f16(d);
    y[b].m = f32_to_f16(min);
    pack_q5(q, y[b].qs, y[b].qh);
  }
}

void quantize_row_q4_k(const float* x, BlockQ4K* y, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b, x += kSuperBlock) {
    float step[8], neg_min[8];  // per sub-block of 32
    float max_step = 0.0f, max_neg_min = 0.0f;
    for (int j = 0; j < 8; ++j) {
      const auto [lo, hi] = std::minmax_element(x + 32 * j, x + 32 * j + 32);
      const float min = std::min(*lo, 0.0f);
      step[j] = (*hi - min) / 15.0f;
      neg_min[j] = -min;
      max_step = std::max(max_step, step[j]);
      max_neg_min = std::max(max_neg_min, neg_min[j]);
    }
    const float d = f16_to_f32(f32_to_f16(max_step / 63.0f));
    const float dmin = f16_to_f32(f32_to_f16(max_neg_min / 63.0f));
    y[b].d = f32_to_f16(d);
    y[b].dmin = f32_to_f16(dmin);
    uint8_t sc[8], mn[8];
    for (int j = 0; j < 8; ++j) {
      sc[j] = static_cast<uint8_t>(std::clamp(d > 0 ? static_cast<int>(std::nearbyint(step[j] / d)) : 0, 0, 63));
      mn[j] = static_cast<uint8_t>(std::clamp(dmin > 0 ? static_cast<int>(std::nearbyint(neg_min[j] / dmin)) : 0, 0, 63));
    }
    pack_k4_scales(sc, mn, y[b].scales);
    uint8_t q[kSuperBlock];
    for (int j = 0; j < 8; ++j) {
      const float f = d * sc[j], m = dmin * mn[j];
      for (int l = 0; l < 32; ++l) {
        const float v = x[32 * j + l];
        q[32 * j + l] = static_cast<uint8_t>(f > 0 ? std::clamp(static_cast<int>(std::nearbyint((v + m) / f)), 0, 15) : 0);
      }
    }
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) y[b].qs[32 * c + l] = static_cast<uint8_t>(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
  }
}

void quantize_row_q6_k(const float* x, BlockQ6K* y, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b, x += kSuperBlock) {
    float step[16];  // per group of 16
    float max_step = 0.0f;
    for (int g = 0; g < 16; ++g) {
      float amax = 0.0f;
      for (int l = 0; l < 16; ++l) amax = std::max(amax, std::fabs(x[16 * g + l]));
      step[g] = amax / 31.0f;
      max_step = std::max(max_step, step[g]);
    }
    const float d = f16_to_f32(f32_to_f16(max_step / 127.0f));
    y[b].d = f32_to_f16(d);
    uint8_t q[kSuperBlock];  // q - 32 in -32..31, stored + 32
    for (int g = 0; g < 16; ++g) {
      const int sc = d > 0 ? std::clamp(static_cast<int>(std::nearbyint(step[g] / d)), 0, 127) : 0;
      y[b].scales[g] = static_cast<int8_t>(sc);
      const float f = d * static_cast<float>(sc);
      for (int l = 0; l < 16; ++l) {
        const int v = f > 0 ? static_cast<int>(std::nearbyint(x[16 * g + l] / f)) : 0;
        q[16 * g + l] = static_cast<uint8_t>(std::clamp(v, -32, 31) + 32);
      }
    }
    // Layout of dequantize_row_q6_k: half h, quarter k of 32 elements.
    for (int h = 0; h < 2; ++h) {
      const uint8_t* qq = q + 128 * h;
      for (int l = 0; l < 32; ++l) {
        y[b].ql[64 * h + l] = static_cast<uint8_t>((qq[l] & 0x0F) | ((qq[l + 64] & 0x0F) << 4));
        y[b].ql[64 * h + 32 + l] = static_cast<uint8_t>((qq[l + 32] & 0x0F) | ((qq[l + 96] & 0x0F) << 4));
        y[b].qh[32 * h + l] = static_cast<uint8_t>((qq[l] >> 4) | ((qq[l + 32] >> 4) << 2) | ((qq[l + 64] >> 4) << 4) |
                                                   ((qq[l + 96] >> 4) << 6));
      }
    }
  }
}

void quantize_row_q8_k(const float* x, BlockQ8K* y, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b, x += kSuperBlock) {
    float amax = 0.0f;
    for (int j = 0; j < kSuperBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = d;
    for (int j = 0; j < kSuperBlock; ++j) y[b].qs[j] = round_to_i8(x[j] * id);
    for (int g = 0; g < kSuperBlock / 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += y[b].qs[16 * g + j];
      y[b].bsums[g] = static_cast<int16_t>(sum);
    }
  }
}

void dequantize_row_q8_k(const BlockQ8K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b, y += kSuperBlock)
    for (int j = 0; j < kSuperBlock; ++j) y[j] = x[b].d * static_cast<float>(x[b].qs[j]);
}

void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kBlock; ++b, x += kBlock) {
    float amax = 0.0f;
    for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_f16(d);
    for (int j = 0; j < kBlock; ++j) y[b].qs[j] = round_to_i8(x[j] * id);
  }
}

void quantize_row_q8_1(const float* x, BlockQ8_1* y, int64_t n) {
  for (int64_t b = 0; b < n / kBlock; ++b, x += kBlock) {
    float amax = 0.0f;
    for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int sum = 0;
    for (int j = 0; j < kBlock; ++j) {
      y[b].qs[j] = round_to_i8(x[j] * id);
      sum += y[b].qs[j];
    }
    const uint16_t d16 = f32_to_f16(d);
    y[b].d = d16;
    y[b].s = f32_to_f16(f16_to_f32(d16) * static_cast<float>(sum));
  }
}

}  // namespace tessera::ggml
