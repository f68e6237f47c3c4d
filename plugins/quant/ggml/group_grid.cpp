#include "group_grid.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "blocks.hpp"
#include "tessera/half.hpp"

namespace tessera::ggml {
namespace {

constexpr float kLargestF16 = 65504.0f;

// s with its significand rounded to 7 bits (nearest; down where that would
// pass the largest f16), as an f16 value.
float with_seven_significant_bits(float s) {
  int e = 0;
  const float significand = std::frexp(s, &e);  // s = significand · 2^e, significand in [0.5, 1)
  float r = std::ldexp(std::nearbyint(significand * 128.0f) / 128.0f, e);
  if (r > kLargestF16) r = std::ldexp(std::floor(significand * 128.0f) / 128.0f, e);
  return f16_to_f32(f32_to_f16(r));
}

}  // namespace

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
  float s = f16_to_f32(f32_to_f16(std::min((hi - lo) / static_cast<float>(top), kLargestF16)));
  if (!(s > 0.0f)) s = f16_to_f32(1);
  // An asymmetric 4-bit step keeps 7 significant bits where GPTQ's reference
  // keeps the f16's 11: every offset −s·z (z < 16) is then an f16 too, so
  // the layer loads as Q4_1, 5.0 bits a weight, instead of Q5_0's 5.5. The
  // step moves by at most 2^-8 of itself (Qwen2.5-Coder-0.5B into 4-bit
  // groups of 128, Jargon File: 12.917 -> 12.911; decode 166-168 -> 178-179
  // tok/s). 2- and 3-bit groups load as Q4_0 whatever their zeros.
  if (!shape.symmetric && shape.bits == 4) s = with_seven_significant_bits(s);
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
