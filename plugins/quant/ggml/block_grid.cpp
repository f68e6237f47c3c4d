#include "block_grid.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "blocks.hpp"
#include "reference.hpp"
#include "tessera/half.hpp"

namespace tessera::ggml {
namespace {

float stored(float v) { return f16_to_f32(f32_to_f16(v)); }

// Symmetric formats: the value of largest magnitude maps to q = 0, so d takes its sign.
BlockGrid symmetric_grid(const float* x, int half) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < kBlock; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  BlockGrid g;
  g.d = stored(max / static_cast<float>(-half));
  g.m = -static_cast<float>(half) * g.d;
  g.bottom = 0;
  g.top = 2 * half - 1;
  g.empty_q = half;
  return g;
}

BlockGrid min_max_grid(const float* x, int top) {
  const auto [lo, hi] = std::minmax_element(x, x + kBlock);
  BlockGrid g;
  g.d = stored((*hi - *lo) / static_cast<float>(top));
  g.m = stored(*lo);
  g.bottom = 0;
  g.top = top;
  g.empty_q = 0;
  return g;
}

// Q4_K/Q5_K: the 8 sub-blocks' steps and minima over `top` levels, as
// 6-bit multiples of the super-block's D and Dmin.
void k_grids(const float* x, int top, BlockGrid* grids) {
  constexpr int kSubBlocks = kSuperBlock / kBlock;
  float step[kSubBlocks], neg_min[kSubBlocks];
  float max_step = 0.0f, max_neg_min = 0.0f;
  for (int j = 0; j < kSubBlocks; ++j) {
    const auto [lo, hi] = std::minmax_element(x + kBlock * j, x + kBlock * (j + 1));
    const float min = std::min(*lo, 0.0f);  // the format subtracts a minimum, never adds one
    step[j] = (*hi - min) / static_cast<float>(top);
    neg_min[j] = -min;
    max_step = std::max(max_step, step[j]);
    max_neg_min = std::max(max_neg_min, neg_min[j]);
  }
  const float d = stored(max_step / 63.0f);
  const float dmin = stored(max_neg_min / 63.0f);
  auto six_bits = [](float v, float unit) {
    return static_cast<uint8_t>(std::clamp(unit > 0 ? static_cast<int>(std::nearbyint(v / unit)) : 0, 0, 63));
  };
  for (int j = 0; j < kSubBlocks; ++j) {
    BlockGrid& g = grids[j];
    g.super_d = d;
    g.super_dmin = dmin;
    g.k_scale = six_bits(step[j], d);
    g.k_min = six_bits(neg_min[j], dmin);
    g.d = d * static_cast<float>(g.k_scale);  // as the dequantizers compute them
    g.m = -(dmin * static_cast<float>(g.k_min));
    g.bottom = 0;
    g.top = top;
    g.empty_q = 0;
  }
}

// Q6_K and Q3_K: the 16 sub-blocks' signed steps (each sub-block's value of
// largest magnitude at q - half = -half) as integer multiples, at most
// max_scale in magnitude, of the super-block's D.
void symmetric_k_grids(const float* x, int half, int max_scale, BlockGrid* grids) {
  constexpr int kSubBlocks = kSuperBlock / 16;
  float step[kSubBlocks];
  float max_step = 0.0f;
  for (int j = 0; j < kSubBlocks; ++j) {
    float amax = 0.0f, max = 0.0f;
    for (int l = 0; l < 16; ++l) {
      if (std::fabs(x[16 * j + l]) > amax) {
        amax = std::fabs(x[16 * j + l]);
        max = x[16 * j + l];
      }
    }
    step[j] = max / static_cast<float>(-half);
    max_step = std::max(max_step, std::fabs(step[j]));
  }
  const float d = stored(max_step / static_cast<float>(max_scale));
  for (int j = 0; j < kSubBlocks; ++j) {
    BlockGrid& g = grids[j];
    g.super_d = d;
    const int scale = d > 0 ? static_cast<int>(std::nearbyint(step[j] / d)) : 0;
    g.signed_scale = static_cast<int8_t>(std::clamp(scale, -max_scale, max_scale));
    g.d = d * static_cast<float>(g.signed_scale);  // as the dequantizers compute it
    g.m = -static_cast<float>(half) * g.d;
    g.bottom = 0;
    g.top = 2 * half - 1;
    g.empty_q = half;
  }
}

// One Q3_K super-block from its 16 grids and 256 indices (q in 0..7), in the
// layout low_bit_kquants.hpp reads: sub-block s's scale + 32 as its low four
// bits in the low (s < 8) or high nibble of scales[s % 8] and its high two at
// bits 2 (s / 4) of scales[8 + s % 4]; element e's two low bits at bits
// 2 ((e % 128) / 32) of qs[32 (e / 128) + e % 32], its third at bit e / 32
// of hmask[e % 32].
void pack_q3_k(const BlockGrid* grids, const int* q, BlockQ3K* b) {
  b->d = f32_to_f16(grids[0].super_d);
  std::memset(b->scales, 0, sizeof(b->scales));
  for (int s = 0; s < 16; ++s) {
    const int v = grids[s].signed_scale + 32;  // 0..63
    b->scales[s % 8] = static_cast<uint8_t>(b->scales[s % 8] | ((v & 0x0F) << (s < 8 ? 0 : 4)));
    b->scales[8 + s % 4] = static_cast<uint8_t>(b->scales[8 + s % 4] | ((v >> 4) << (2 * (s / 4))));
  }
  std::memset(b->qs, 0, sizeof(b->qs));
  std::memset(b->hmask, 0, sizeof(b->hmask));
  for (int e = 0; e < kSuperBlock; ++e) {
    uint8_t& low = b->qs[32 * (e / 128) + e % 32];
    low = static_cast<uint8_t>(low | ((q[e] & 3) << (2 * ((e % 128) / 32))));
    b->hmask[e % 32] = static_cast<uint8_t>(b->hmask[e % 32] | ((q[e] >> 2) << (e / 32)));
  }
}

// One Q6_K super-block from its 16 grids and 256 indices (q in 0..63), in
// the layout of dequantize_row_q6_k: half h of 128, its elements l, l + 32,
// l + 64, l + 96 in the low and high nibbles of ql[64h + l] and
// ql[64h + 32 + l] and two bits each of qh[32h + l].
void pack_q6_k(const BlockGrid* grids, const int* q, BlockQ6K* b) {
  b->d = f32_to_f16(grids[0].super_d);
  for (int j = 0; j < kSuperBlock / 16; ++j) b->scales[j] = grids[j].signed_scale;
  for (int h = 0; h < 2; ++h) {
    const int* qq = q + 128 * h;
    for (int l = 0; l < 32; ++l) {
      b->ql[64 * h + l] = static_cast<uint8_t>((qq[l] & 0x0F) | ((qq[l + 64] & 0x0F) << 4));
      b->ql[64 * h + 32 + l] = static_cast<uint8_t>((qq[l + 32] & 0x0F) | ((qq[l + 96] & 0x0F) << 4));
      b->qh[32 * h + l] = static_cast<uint8_t>((qq[l] >> 4) | ((qq[l + 32] >> 4) << 2) | ((qq[l + 64] >> 4) << 4) |
                                               ((qq[l + 96] >> 4) << 6));
    }
  }
}

// One Q4_K or Q5_K super-block from its 8 grids and 256 indices.
template <typename Block>
void pack_k(const BlockGrid* grids, const int* q, Block* b) {
  constexpr int kSubBlocks = kSuperBlock / kBlock;
  uint8_t sc[kSubBlocks], mn[kSubBlocks];
  for (int j = 0; j < kSubBlocks; ++j) {
    sc[j] = grids[j].k_scale;
    mn[j] = grids[j].k_min;
  }
  b->d = f32_to_f16(grids[0].super_d);
  b->dmin = f32_to_f16(grids[0].super_dmin);
  pack_k4_scales(sc, mn, b->scales);
  // Chunk c of 64: its first 32 in the low nibbles of qs[32c ..], its last 32 in the high.
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l)
      b->qs[32 * c + l] = static_cast<uint8_t>((q[64 * c + l] & 0x0F) | ((q[64 * c + 32 + l] & 0x0F) << 4));
  if constexpr (std::is_same_v<Block, BlockQ5K>) {
    std::memset(b->qh, 0, sizeof(b->qh));
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        b->qh[l] = static_cast<uint8_t>(b->qh[l] | ((q[64 * c + l] >> 4) << (2 * c)) |
                                        ((q[64 * c + 32 + l] >> 4) << (2 * c + 1)));
      }
    }
  }
}

// The legacy formats' grid for one block x[32].
BlockGrid legacy_grid(DType type, const float* x) {
  switch (type) {
    case DType::q4_0: return symmetric_grid(x, 8);
    case DType::q5_0: return symmetric_grid(x, 16);
    case DType::q4_1: return min_max_grid(x, 15);
    case DType::q5_1: return min_max_grid(x, 31);
    case DType::q8_0: {
      float amax = 0.0f;
      for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
      BlockGrid g;
      g.d = stored(amax / 127.0f);
      g.m = -128.0f * g.d;
      g.bottom = 1;
      g.top = 255;
      g.empty_q = 128;
      return g;
    }
    default: return {};
  }
}

}  // namespace

int BlockGrid::index(float x) const {
  if (d == 0.0f) return empty_q;
  const float q = std::nearbyint((x - m) / d);
  if (!(q >= static_cast<float>(bottom))) return bottom;  // also NaN
  return q > static_cast<float>(top) ? top : static_cast<int>(q);
}

bool has_block_grid(DType type) {
  return type == DType::q4_0 || type == DType::q4_1 || type == DType::q5_0 || type == DType::q5_1 ||
         type == DType::q8_0 || type == DType::q3_k || type == DType::q4_k || type == DType::q5_k ||
         type == DType::q6_k;
}

int grid_span(DType type) {
  return type == DType::q3_k || type == DType::q4_k || type == DType::q5_k || type == DType::q6_k ? kSuperBlock
                                                                                                 : kBlock;
}

int grid_width(DType type) { return type == DType::q3_k || type == DType::q6_k ? 16 : kBlock; }

void choose_grids(DType type, const float* x, BlockGrid* grids) {
  switch (type) {
    case DType::q4_k: k_grids(x, 15, grids); return;
    case DType::q5_k: k_grids(x, 31, grids); return;
    case DType::q6_k: symmetric_k_grids(x, 32, 127, grids); return;  // int8 scales
    case DType::q3_k: symmetric_k_grids(x, 4, 31, grids); return;    // 6-bit scales, -32..31
    default: grids[0] = legacy_grid(type, x); return;
  }
}

void pack_span(DType type, const BlockGrid* grids, const int* q, void* block) {
  const BlockGrid& grid = grids[0];
  switch (type) {
    case DType::q4_0: {
      auto* b = static_cast<BlockQ4_0*>(block);
      b->d = f32_to_f16(grid.d);
      pack_q4(q, b->qs);
      return;
    }
    case DType::q4_1: {
      auto* b = static_cast<BlockQ4_1*>(block);
      b->d = f32_to_f16(grid.d);
      b->m = f32_to_f16(grid.m);
      pack_q4(q, b->qs);
      return;
    }
    case DType::q5_0: {
      auto* b = static_cast<BlockQ5_0*>(block);
      b->d = f32_to_f16(grid.d);
      pack_q5(q, b->qs, b->qh);
      return;
    }
    case DType::q5_1: {
      auto* b = static_cast<BlockQ5_1*>(block);
      b->d = f32_to_f16(grid.d);
      b->m = f32_to_f16(grid.m);
      pack_q5(q, b->qs, b->qh);
      return;
    }
    case DType::q8_0: {
      auto* b = static_cast<BlockQ8_0*>(block);
      b->d = f32_to_f16(grid.d);
      for (int j = 0; j < kBlock; ++j) b->qs[j] = static_cast<int8_t>(q[j] - 128);
      return;
    }
    case DType::q4_k: pack_k(grids, q, static_cast<BlockQ4K*>(block)); return;
    case DType::q5_k: pack_k(grids, q, static_cast<BlockQ5K*>(block)); return;
    case DType::q6_k: pack_q6_k(grids, q, static_cast<BlockQ6K*>(block)); return;
    case DType::q3_k: pack_q3_k(grids, q, static_cast<BlockQ3K*>(block)); return;
    default: return;
  }
}

}  // namespace tessera::ggml
