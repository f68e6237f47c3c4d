// GPTQ checkpoint groups (group_grid.hpp): each group's grid as GPTQ's
// reference chooses it, the blocks they run as hold every s·(q − z)
// exactly, and the packed tensors hold q, z and s where the reference
// packers put them (read back here one bit at a time).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "ggml_testing.hpp"
#include "grid_quantize.hpp"
#include "group_grid.hpp"
#include "reference.hpp"
#include "tessera/half.hpp"

namespace tessera::ggml {
namespace {

using testing::random_floats;

float f16(float v) { return f16_to_f32(f32_to_f16(v)); }

TEST(GroupGrid, ChosenAsGptqsReferenceQuantizer) {
  const float x[4] = {-0.30f, 0.05f, 0.20f, 0.10f};
  // Asymmetric: [min(x, 0), max(x, 0)] in 15 steps, z = round(0.30 / s);
  // at 4 bits s keeps 7 significant bits (0.5 / 15 = 0.5333 · 2^-4 -> 68/128
  // · 2^-4), so −s·z is an f16; at 3 bits the f16's 11.
  const BlockGrid asym = choose_group_grid({4, 32, false}, x, 4);
  EXPECT_EQ(asym.d, 0.033203125f);
  EXPECT_EQ(f16(asym.m), asym.m);
  EXPECT_EQ(choose_group_grid({3, 32, false}, x, 4).d, f16(0.50f / 7));
  EXPECT_EQ(asym.empty_q, static_cast<int>(std::nearbyint(0.30f / asym.d)));
  EXPECT_EQ(asym.m, -asym.d * static_cast<float>(asym.empty_q));
  EXPECT_EQ(asym.top, 15);
  // Symmetric: ±max |x| in 7 steps of 3 bits, z = 4.
  const BlockGrid sym = choose_group_grid({3, 32, true}, x, 4);
  EXPECT_EQ(sym.d, f16(0.60f / 7));
  EXPECT_EQ(sym.empty_q, 4);
  EXPECT_EQ(sym.top, 7);
  // Positive weights alone still span 0 (z = 0), and an all-zero group [−1, 1].
  const float positive[2] = {0.1f, 0.4f};
  EXPECT_EQ(choose_group_grid({2, 32, false}, positive, 2).empty_q, 0);
  const float zeros[2] = {0.0f, 0.0f};
  const BlockGrid flat = choose_group_grid({4, 32, true}, zeros, 2);
  EXPECT_EQ(flat.d, f16(2.0f / 15));
  EXPECT_EQ(flat.value(flat.index(0.0f)), flat.d * static_cast<float>(flat.index(0.0f) - flat.empty_q));
  // A group too wide for an f16 step keeps the largest finite one (its ends
  // clamp); with 7 significant bits, the largest of those.
  const float huge[2] = {-3e6f, 3e6f};
  EXPECT_EQ(choose_group_grid({4, 32, true}, huge, 2).d, 65504.0f);
  EXPECT_EQ(choose_group_grid({4, 32, false}, huge, 2).d, 65024.0f);
}

// pack() writes the smallest blocks that hold every group: Q4_0 where every
// q − z + 8 is a nibble (symmetric 4 bits, 2 and 3 bits always), Q8_0 for 8
// bits, Q4_1 where every asymmetric −s·z is an f16 (always with the 7-bit
// 4-bit steps), else Q5_0 (written here from the Q4_1 case's groups); the
// format's own dequantizer gives back every value the groups hold.
TEST(GroupGrid, TheBlocksHoldEveryGroupValueExactly) {
  constexpr int64_t kRows = 8, kCols = 32 * 7;
  const auto w = random_floats(kRows * kCols, 3);
  std::vector<float> positive(w.size());
  for (size_t i = 0; i < w.size(); ++i) positive[i] = std::fabs(w[i]);
  const struct {
    GroupShape shape;
    DType blocks;
    const std::vector<float>* weights;
  } cases[] = {{{4, 128, true}, DType::q4_0, &w},  {{3, 96, true}, DType::q4_0, &w},
               {{3, 32, false}, DType::q4_0, &w},  {{2, 32, false}, DType::q4_0, &w},
               {{8, 64, true}, DType::q8_0, &w},   {{4, 64, false}, DType::q4_1, &w},
               {{4, 64, false}, DType::q4_1, &positive}};
  for (const auto& c : cases) {
    const GridWeights g = round_to_nearest(GridLayout(c.shape), c.weights->data(), kRows, kCols);
    EXPECT_EQ(g.type, c.blocks) << c.shape.bits << "-bit groups of " << c.shape.size;
    const auto bytes = g.pack();
    const uint64_t row_bytes = dtype_row_bytes(g.type, kCols);
    ASSERT_EQ(bytes.size(), row_bytes * kRows);
    std::vector<float> got(kCols), want(kRows * kCols);
    g.values(want.data());
    for (int64_t r = 0; r < kRows; ++r) {
      ASSERT_TRUE(dequantize_row(g.type, bytes.data() + r * row_bytes, got.data(), kCols));
      for (int64_t col = 0; col < kCols; ++col)
        ASSERT_EQ(got[col], want[r * kCols + col]) << c.shape.bits << "-bit, row " << r << ", column " << col;
    }
    if (g.type != DType::q4_1) continue;
    // The same groups as Q5_0 blocks (x = q − z + 16), the loader's choice
    // for offsets that are not f16 values: every value again.
    const int64_t blocks_per_row = kCols / kBlock;
    BlockQ5_0 block;
    std::vector<float> q5(kBlock);
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t b = 0; b < blocks_per_row; ++b) {
        pack_group_block(DType::q5_0, g.grid(r, b * kBlock), &g.q[static_cast<size_t>(r * kCols + b * kBlock)],
                         &block);
        ASSERT_TRUE(dequantize_row(DType::q5_0, &block, q5.data(), kBlock));
        for (int j = 0; j < kBlock; ++j) ASSERT_EQ(q5[j], want[r * kCols + b * kBlock + j]) << "Q5_0, row " << r;
      }
  }
}

// Bit `position` of a stream of 32-bit words, little-endian within each.
uint32_t bits_at(const std::vector<uint32_t>& words, int64_t first, int64_t stride, int64_t position, int bits) {
  uint32_t v = 0;
  for (int b = 0; b < bits; ++b) {
    const int64_t at = position + b;
    v |= ((words[static_cast<size_t>(first + (at / 32) * stride)] >> (at % 32)) & 1u) << b;
  }
  return v;
}

template <typename T>
std::vector<T> as(const std::vector<std::byte>& bytes) {
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

// qweight [cols·b/32, rows]: row r's values a bit stream down column r of
// the words; qzeros [groups, rows·b/32]: each group's zeros a stream along
// its row; scales [groups, rows] f16. 3 bits cross words (32 in 3 words).
TEST(GroupGrid, PackedTensorsHoldTheValuesZerosAndScalesWhereGptqPutsThem) {
  constexpr int64_t kRows = 32, kCols = 32 * 5;
  const auto w = random_floats(kRows * kCols, 4);
  for (const GroupShape shape : {GroupShape{3, 64, false}, GroupShape{4, 128, true}, GroupShape{2, 32, false},
                                 GroupShape{8, 96, true}}) {
    const GridWeights g = round_to_nearest(GridLayout(shape), w.data(), kRows, kCols);
    const GptqTensors t = pack_gptq(shape, g.grids.data(), g.q.data(), kRows, kCols);
    const int64_t groups = (kCols + shape.size - 1) / shape.size;
    ASSERT_EQ(t.qweight_shape, (std::vector<int64_t>{kCols * shape.bits / 32, kRows}));
    ASSERT_EQ(t.qzeros_shape, (std::vector<int64_t>{groups, kRows * shape.bits / 32}));
    ASSERT_EQ(t.scales_shape, (std::vector<int64_t>{groups, kRows}));
    const auto qweight = as<uint32_t>(t.qweight);
    const auto qzeros = as<uint32_t>(t.qzeros);
    const auto scales = as<uint16_t>(t.scales);
    ASSERT_EQ(qweight.size(), static_cast<size_t>(kCols * shape.bits / 32 * kRows));
    ASSERT_EQ(qzeros.size(), static_cast<size_t>(groups * kRows * shape.bits / 32));
    for (int64_t r = 0; r < kRows; ++r) {
      for (int64_t c = 0; c < kCols; ++c)
        ASSERT_EQ(bits_at(qweight, r, kRows, c * shape.bits, shape.bits), g.q[r * kCols + c])
            << shape.bits << " bits, row " << r << ", column " << c;
      for (int64_t grp = 0; grp < groups; ++grp) {
        const BlockGrid& grid = g.grids[r * groups + grp];
        EXPECT_EQ(bits_at(qzeros, grp * (kRows * shape.bits / 32), 1, r * shape.bits, shape.bits),
                  static_cast<uint32_t>(grid.empty_q));
        EXPECT_EQ(f16_to_f32(scales[grp * kRows + r]), grid.d);
      }
    }
  }
}

}  // namespace
}  // namespace tessera::ggml
