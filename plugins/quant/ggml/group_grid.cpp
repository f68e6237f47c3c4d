#include "group_grid.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "blocks.hpp"
#include "tessera/half.hpp"

namespace tessera::ggml {

BlockGrid choose_group_grid(const GroupShape& shape, const float* x, int n) {
  const int top = (1 << shape.bits) - 1;
  float lo = 0.0f, hi = 0.0f;
  for (int j = 0; j < n; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  if (shape.symmetric) {
    hi = std::max(-lo, hi);
    if (lo < 0.0f) lo = -hi;
  }
  if (lo == 0.0f && hi == 0.0f) {
    lo = -1.0f;
    hi = 1.0f;
  }
  // The checkpoint's scale is a finite f16, never 0: from the smallest
  // subnormal to the largest value (a wider group clamps at its ends).
  constexpr float kLargestF16 = 65504.0f;
  float s = f16_to_f32(f32_to_f16(std::min((hi - lo) / static_cast<float>(top), kLargestF16)));
  if (!(s > 0.0f)) s = f16_to_f32(1);
  const int z = shape.symmetric ? (top + 1) / 2 : std::clamp(static_cast<int>(std::nearbyint(-lo / s)), 0, top);
  BlockGrid g;
  g.d = s;
  g.m = -s * static_cast<float>(z);
  g.bottom = 0;
  g.top = top;
  g.empty_q = z;
  return g;
}

DType group_block_type(const GroupShape& shape, std::span<const BlockGrid> grids) {
  if (shape.bits == 8) return DType::q8_0;
  const int lowest_zero = (1 << shape.bits) - 8;  // q − z + 8 stays a nibble for z in [this, 8]
  if (std::all_of(grids.begin(), grids.end(),
                  [&](const BlockGrid& g) { return g.empty_q >= lowest_zero && g.empty_q <= 8; }))
    return DType::q4_0;
  for (const BlockGrid& g : grids)
    if (f16_to_f32(f32_to_f16(g.m)) != g.m) return DType::q5_0;
  return DType::q4_1;
}

void pack_group_block(DType type, const BlockGrid& grid, const uint8_t* q, void* block) {
  int stored[kBlock];
  BlockGrid as_block = grid;
  const int z = grid.empty_q;
  if (type == DType::q4_0 || type == DType::q5_0) {  // d·(x − 8), x = q − z + 8 / d·(x − 16), x = q − z + 16
    const int half = type == DType::q4_0 ? 8 : 16;
    as_block.m = static_cast<float>(-half) * grid.d;
    for (int j = 0; j < kBlock; ++j) stored[j] = q[j] - z + half;
  } else {  // Q4_1: d·q + m; Q8_0: d·(q − 128), z = 128
    for (int j = 0; j < kBlock; ++j) stored[j] = q[j];
  }
  pack_span(type, &as_block, stored, block);
}

namespace {

// Sets `bits` bits of value v at bit `position` of the stream of words
// words[0], words[stride], words[2·stride], ... (low bits first).
void put_bits(uint32_t* words, int64_t stride, int64_t position, int bits, uint32_t v) {
  const int64_t word = position / 32;
  const int shift = static_cast<int>(position % 32);
  words[word * stride] |= v << shift;
  if (shift + bits > 32) words[(word + 1) * stride] |= v >> (32 - shift);
}

}  // namespace

GptqTensors pack_gptq(const GroupShape& shape, const BlockGrid* grids, const uint8_t* q, int64_t rows, int64_t cols) {
  const int b = shape.bits;
  const int64_t groups = (cols + shape.size - 1) / shape.size;
  GptqTensors t;
  t.qweight_shape = {cols * b / 32, rows};
  t.qzeros_shape = {groups, rows * b / 32};
  t.scales_shape = {groups, rows};
  std::vector<uint32_t> qweight(static_cast<size_t>(cols * b / 32 * rows), 0);
  std::vector<uint32_t> qzeros(static_cast<size_t>(groups * rows * b / 32), 0);
  std::vector<uint16_t> scales(static_cast<size_t>(groups * rows));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c)
      put_bits(qweight.data() + r, rows, c * b, b, q[static_cast<size_t>(r * cols + c)]);
    for (int64_t g = 0; g < groups; ++g) {
      const BlockGrid& grid = grids[static_cast<size_t>(r * groups + g)];
      put_bits(qzeros.data() + g * (rows * b / 32), 1, r * b, b, static_cast<uint32_t>(grid.empty_q));
      scales[static_cast<size_t>(g * rows + r)] = f32_to_f16(grid.d);
    }
  }
  auto bytes = [](const auto& v) {
    std::vector<std::byte> out(v.size() * sizeof(v[0]));
    std::memcpy(out.data(), v.data(), out.size());
    return out;
  };
  t.qweight = bytes(qweight);
  t.qzeros = bytes(qzeros);
  t.scales = bytes(scales);
  return t;
}

}  // namespace tessera::ggml
