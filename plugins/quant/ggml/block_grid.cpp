#include "block_grid.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

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

}  // namespace

int BlockGrid::index(float x) const {
  if (d == 0.0f) return empty_q;
  const float q = std::nearbyint((x - m) / d);
  if (!(q >= static_cast<float>(bottom))) return bottom;  // also NaN
  return q > static_cast<float>(top) ? top : static_cast<int>(q);
}

bool has_block_grid(DType type) {
  return type == DType::q4_0 || type == DType::q4_1 || type == DType::q5_0 || type == DType::q5_1 ||
         type == DType::q8_0;
}

BlockGrid choose_block_grid(DType type, const float* x) {
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

void pack_block(DType type, const BlockGrid& grid, const int* q, void* block) {
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
    default: return;
  }
}

}  // namespace tessera::ggml
