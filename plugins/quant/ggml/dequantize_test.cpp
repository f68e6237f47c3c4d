// Dequantization of hand-made blocks. Expected values are worked out by hand
// from the ggml layouts (comments), not from the code under test.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "dequantize_fast.hpp"
#include "reference.hpp"
#include "ggml_testing.hpp"

namespace tessera::ggml {
namespace {

constexpr uint16_t kHalf = 0x3800;      // 0.5
constexpr uint16_t kOne = 0x3C00;       // 1.0
constexpr uint16_t kTwo = 0x4000;       // 2.0
constexpr uint16_t kQuarter = 0x3400;   // 0.25
constexpr uint16_t kMinusOne = 0xBC00;  // -1.0

TEST(Dequantize, Q4_0) {
  BlockQ4_0 b{};
  b.d = kHalf;
  std::memset(b.qs, 0x88, sizeof b.qs);  // every q = 8 -> 0
  b.qs[0] = 0x1F;                        // element 0: q = 15 -> (15 - 8) * 0.5; element 16: q = 1 -> -3.5
  b.qs[15] = 0x08;                       // element 15: q = 8 -> 0; element 31: q = 0 -> -4
  float y[32];
  dequantize_row_q4_0(&b, y, 32);
  EXPECT_FLOAT_EQ(y[0], 3.5f);
  EXPECT_FLOAT_EQ(y[16], -3.5f);
  EXPECT_FLOAT_EQ(y[15], 0.0f);
  EXPECT_FLOAT_EQ(y[31], -4.0f);
  EXPECT_FLOAT_EQ(y[7], 0.0f);
}

TEST(Dequantize, Q4_1) {
  BlockQ4_1 b{};
  b.d = kTwo;
  b.m = kMinusOne;
  b.qs[3] = 0x52;  // element 3: 2 * 2 - 1 = 3; element 19: 5 * 2 - 1 = 9
  float y[32];
  dequantize_row_q4_1(&b, y, 32);
  EXPECT_FLOAT_EQ(y[3], 3.0f);
  EXPECT_FLOAT_EQ(y[19], 9.0f);
  EXPECT_FLOAT_EQ(y[0], -1.0f);  // q = 0 -> the minimum
  EXPECT_FLOAT_EQ(y[31], -1.0f);
}

TEST(Dequantize, Q5_0TakesItsFifthBitFromQh) {
  BlockQ5_0 b{};
  b.d = kHalf;
  std::memset(b.qs, 0x00, sizeof b.qs);  // every low nibble 0: q = 0 or 16
  b.qh[0] = 0x01;                        // element 0: q = 16 -> 0
  b.qh[2] = 0x02;                        // element 17: q = 16 -> 0
  b.qh[3] = 0x80;                        // element 31: q = 16 + 15 below
  b.qs[15] = 0xF0;                       // element 15: q = 0 -> -8; element 31: q = 31 -> 7.5
  b.qs[3] = 0x0F;                        // element 3: q = 15 -> -0.5
  float y[32];
  dequantize_row_q5_0(&b, y, 32);
  EXPECT_FLOAT_EQ(y[0], 0.0f);
  EXPECT_FLOAT_EQ(y[17], 0.0f);
  EXPECT_FLOAT_EQ(y[31], 7.5f);
  EXPECT_FLOAT_EQ(y[15], -8.0f);
  EXPECT_FLOAT_EQ(y[3], -0.5f);
  EXPECT_FLOAT_EQ(y[16], -8.0f);  // q = 0
}

TEST(Dequantize, Q5_1) {
  BlockQ5_1 b{};
  b.d = kTwo;
  b.m = kMinusOne;
  b.qs[3] = 0x52;   // element 3: q = 2; element 19: q = 5
  b.qh[2] = 0x08;   // element 19 gains 16: q = 21
  b.qh[0] = 0x01;   // element 0: q = 16
  float y[32];
  dequantize_row_q5_1(&b, y, 32);
  EXPECT_FLOAT_EQ(y[3], 3.0f);
  EXPECT_FLOAT_EQ(y[19], 41.0f);
  EXPECT_FLOAT_EQ(y[0], 31.0f);
  EXPECT_FLOAT_EQ(y[31], -1.0f);  // q = 0 -> the minimum
}

TEST(Dequantize, Q8_0AndQ8_1) {
  BlockQ8_0 b{};
  BlockQ8_1 b1{};
  b.d = kQuarter;
  b1.d = kQuarter;
  for (int j = 0; j < 32; ++j) b.qs[j] = b1.qs[j] = static_cast<int8_t>(j - 16);
  b.qs[5] = b1.qs[5] = -127;
  float y[32], y1[32];
  dequantize_row_q8_0(&b, y, 32);
  dequantize_row_q8_1(&b1, y1, 32);
  EXPECT_FLOAT_EQ(y[0], -4.0f);
  EXPECT_FLOAT_EQ(y[31], 3.75f);
  EXPECT_FLOAT_EQ(y[5], -31.75f);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], y1[j]) << j;
}

// Q4_K scales used below (bytes of `scales`):
//   sub-block 0: scale = scales[0] & 63 = 2, min = scales[4] & 63 = 3
//   sub-block 5: scale = (scales[9] & 15) | (scales[1] >> 6) << 4 = 1 | 16 = 17
//                min   = (scales[9] >> 4) | (scales[5] >> 6) << 4 = 2 | 32 = 34
//   sub-block 1: scale = scales[1] & 63 = 0, min = scales[5] & 63 = 0
void fill_k_scales(uint8_t* s) {
  std::memset(s, 0, 12);
  s[0] = 2;
  s[4] = 3;
  s[9] = 0x21;
  s[1] = 0x40;
  s[5] = 0x80;
}

TEST(Dequantize, Q4K) {
  BlockQ4K b{};
  b.d = kOne;
  b.dmin = kHalf;
  fill_k_scales(b.scales);
  b.qs[0] = 0x07;   // element 0 (chunk 0 low nibble, sub-block 0): 1 * 2 * 7 - 0.5 * 3 = 12.5
  b.qs[65] = 0x90;  // element 161 (chunk 2 high nibble, sub-block 5, l = 1): 17 * 9 - 0.5 * 34 = 136
  std::vector<float> y(256);
  dequantize_row_q4_k(&b, y.data(), 256);
  EXPECT_FLOAT_EQ(y[0], 12.5f);
  EXPECT_FLOAT_EQ(y[1], -1.5f);   // q = 0 in sub-block 0: -dmin * 3
  EXPECT_FLOAT_EQ(y[161], 136.0f);
  EXPECT_FLOAT_EQ(y[160], -17.0f);  // q = 0 in sub-block 5
  EXPECT_FLOAT_EQ(y[40], 0.0f);     // sub-block 1: scale 0, min 0
}

TEST(Dequantize, Q5K) {
  BlockQ5K b{};
  b.d = kOne;
  b.dmin = kHalf;
  fill_k_scales(b.scales);
  b.qs[0] = 0x07;
  b.qh[0] = 0x01;   // bit 0: high bit of element 0 -> q = 23: 2 * 23 - 1.5 = 44.5
  b.qs[65] = 0x90;
  b.qh[1] = 0x20;   // bit 5 = chunk 2 second half, l = 1 -> element 161: q = 25: 17 * 25 - 17 = 408
  std::vector<float> y(256);
  dequantize_row_q5_k(&b, y.data(), 256);
  EXPECT_FLOAT_EQ(y[0], 44.5f);
  EXPECT_FLOAT_EQ(y[161], 408.0f);
  EXPECT_FLOAT_EQ(y[1], -1.5f);
  EXPECT_FLOAT_EQ(y[33], 0.0f);  // sub-block 1, no high bit set by qh[1] bit 1
}

TEST(Dequantize, Q6K) {
  BlockQ6K b{};
  b.d = kHalf;
  b.scales[0] = 2;    // elements 0..15
  b.scales[2] = -3;   // elements 32..47
  b.scales[4] = 1;    // elements 64..79
  b.scales[15] = 4;   // second half, elements 128 + 96 + 16 .. +31
  b.ql[0] = 0x05;     // element 0: low 4 bits 5 ; element 64: low 4 bits 0
  b.qh[0] = 0x02;     // element 0: high bits 2 -> q = 37 - 32 = 5 -> 0.5 * 2 * 5 = 5
                      // element 32: (qh >> 2) & 3 = 0; element 64: (qh >> 4) & 3 = 0
  b.ql[32] = 0x0F;    // element 32: q = 15 - 32 = -17 -> 0.5 * -3 * -17 = 25.5
  b.ql[64 + 32 + 17] = 0xA0;  // element 241: low 4 bits 10
  b.qh[32 + 17] = 0xC0;       // element 241: high bits 3 -> q = 58 - 32 = 26 -> 0.5 * 4 * 26 = 52
  std::vector<float> y(256);
  dequantize_row_q6_k(&b, y.data(), 256);
  EXPECT_FLOAT_EQ(y[0], 5.0f);
  EXPECT_FLOAT_EQ(y[32], 25.5f);
  EXPECT_FLOAT_EQ(y[64], -16.0f);  // q = -32 with scale 1
  EXPECT_FLOAT_EQ(y[241], 52.0f);
  EXPECT_FLOAT_EQ(y[16], 0.0f);    // scales[1] = 0
}

TEST(Dequantize, Q2K) {
  BlockQ2K b{};
  b.d = kOne;
  b.dmin = kHalf;
  b.scales[5] = 0x23;  // elements 80..95: sc 3, mn 2
  b.scales[15] = 0xF1; // elements 240..255: sc 1, mn 15
  b.qs[20] = 0x20;     // element 84 (half 0, j = 2: bits 4-5 of qs[16 + 4]) q = 2 -> 3 * 2 - 0.5 * 2 = 5
  b.qs[32 + 16 + 15] = 0xC0;  // element 255 (half 1, j = 3: bits 6-7 of qs[32 + 16 + 15]) q = 3 -> 3 - 7.5
  std::vector<float> y(256);
  dequantize_row_q2_k(&b, y.data(), 256);
  EXPECT_FLOAT_EQ(y[84], 5.0f);
  EXPECT_FLOAT_EQ(y[85], -1.0f);    // q = 0: only the minimum
  EXPECT_FLOAT_EQ(y[255], -4.5f);
  EXPECT_FLOAT_EQ(y[254], -7.5f);
  EXPECT_FLOAT_EQ(y[0], 0.0f);      // scales[0] = 0
}

TEST(Dequantize, Q3K) {
  BlockQ3K b{};
  b.d = kQuarter;
  // Sub-block 10 (elements 160..175): sc = 45 = 0b10'1101, low nibble in the
  // high nibble of scales[2], high bits at bits 4-5 of scales[8 + 2].
  b.scales[2] = 0xD0;
  b.scales[10] = 0x20;
  b.qs[32 + 7] = 0x04;   // element 167 (half 1, j = 1: bits 2-3 of qs[32 + 7]): low bits 1
  b.qs[32 + 8] = 0x0C;   // element 168: low bits 3
  b.hmask[8] = 0x20;     // element 168: bit 4 * 1 + 1 set, no - 4
  std::vector<float> y(256);
  dequantize_row_q3_k(&b, y.data(), 256);
  EXPECT_FLOAT_EQ(y[167], 0.25f * 13 * (1 - 4));
  EXPECT_FLOAT_EQ(y[168], 0.25f * 13 * 3);
  EXPECT_FLOAT_EQ(y[160], 0.25f * 13 * -4);
  EXPECT_FLOAT_EQ(y[0], 0.25f * -32 * -4);  // every other scale byte 0: sc - 32 = -32
}

// The sub-block loops against the element-wise reading of blocks.hpp on
// random blocks: element e takes bits 2j, 2j + 1 of qs[32 (e / 128) + e % 32]
// (j = (e % 128) / 32), Q3_K bit 4 (e / 128) + j of hmask[e % 32], scale of
// sub-block e / 16.
TEST(Dequantize, Q2KAndQ3KFollowTheElementLayout) {
  std::mt19937 rng(31);
  auto fill = [&](auto& block) {
    auto* p = reinterpret_cast<uint8_t*>(&block);
    for (size_t i = 0; i < sizeof block; ++i) p[i] = static_cast<uint8_t>(rng());
  };
  BlockQ2K q2;
  BlockQ3K q3;
  fill(q2);
  fill(q3);
  q2.d = kTwo;
  q2.dmin = kQuarter;
  q3.d = kHalf;
  std::vector<float> y2(256), y3(256);
  dequantize_row_q2_k(&q2, y2.data(), 256);
  dequantize_row_q3_k(&q3, y3.data(), 256);
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, j = (e % 128) / 32, l = e % 32, s = e / 16;
    const int low = (q2.qs[32 * h + l] >> (2 * j)) & 3;
    EXPECT_EQ(y2[e], 2.0f * (q2.scales[s] & 15) * low - 0.25f * (q2.scales[s] >> 4)) << "Q2_K element " << e;
    const int sc_low = (s < 8 ? q3.scales[s] : q3.scales[s - 8] >> 4) & 15;
    const int sc = (sc_low | (((q3.scales[8 + s % 4] >> (2 * (s / 4))) & 3) << 4)) - 32;
    const int q = ((q3.qs[32 * h + l] >> (2 * j)) & 3) - ((q3.hmask[l] >> (4 * h + j)) & 1 ? 0 : 4);
    EXPECT_EQ(y3[e], 0.5f * sc * q) << "Q3_K element " << e;
  }
}

// The layouts as llama.cpp's own Python reader (gguf-py) sees them: random
// super-blocks and its values, checked in (tests/data/kquant-vectors, made by
// tools/kquant-vectors/make_vectors.py), bit for bit.
TEST(Dequantize, Q2KAndQ3KMatchGgufPy) {
  const std::filesystem::path dir = std::filesystem::path(TESSERA_SOURCE_DIR) / "tests" / "data" / "kquant-vectors";
  auto read = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  for (DType type : {DType::q2_k, DType::q3_k}) {
    const std::string name(dtype_name(type));
    const auto blocks = read(dir / (name + ".blocks"));
    const auto want = read(dir / (name + ".f32"));
    ASSERT_FALSE(blocks.empty()) << dir / (name + ".blocks") << " is missing: it is checked in";
    const int64_t n = static_cast<int64_t>(want.size() / sizeof(float));
    ASSERT_EQ(static_cast<uint64_t>(blocks.size()), dtype_row_bytes(type, static_cast<uint64_t>(n))) << name;
    std::vector<float> got(static_cast<size_t>(n));
    ASSERT_TRUE(dequantize_row(type, blocks.data(), got.data(), n));
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size()), 0) << name << " differs from gguf-py's values";
  }
}

TEST(Dequantize, HalfAndBfloat) {
  const uint16_t h[4] = {0x3C00, 0xC000, 0x0001, 0x7BFF};  // 1, -2, 2^-24, 65504
  const uint16_t bf[2] = {0x3F80, 0xC0A0};                  // 1, -5
  float y[4];
  dequantize_row_f16(h, y, 4);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -2.0f);
  EXPECT_EQ(y[2], 0x1p-24f);
  EXPECT_EQ(y[3], 65504.0f);
  dequantize_row_bf16(bf, y, 2);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -5.0f);
}

TEST(Dequantize, ByDtypeDispatchAndUnknown) {
  BlockQ8_0 b{};
  b.d = kTwo;
  b.qs[1] = 3;
  float y[32];
  ASSERT_TRUE(dequantize_row(DType::q8_0, &b, y, 32));
  EXPECT_EQ(y[1], 6.0f);
  EXPECT_FALSE(dequantize_row(DType::i32, &b, y, 1));
}

// The fast row dequantization (FloatLinear's f32 path) against the reference,
// bit for bit, on random blocks of every format it handles: random quants and
// random finite f16 scales and minimums (normal and subnormal, both signs).
TEST(Dequantize, FastRowsAreTheReferenceBits) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> byte(0, 255);
  auto random_half = [&] {
    uint16_t h;
    do h = static_cast<uint16_t>(rng()); while ((h & 0x7C00) == 0x7C00);  // no inf or NaN
    return h;
  };
  constexpr int64_t kN = 32 * 37;
  std::vector<BlockQ4_0> q4_0(kN / 32);
  std::vector<BlockQ4_1> q4_1(kN / 32);
  std::vector<BlockQ8_0> q8_0(kN / 32);
  for (size_t b = 0; b < q4_1.size(); ++b) {
    q4_0[b].d = random_half();
    q4_1[b].d = random_half();
    q4_1[b].m = random_half();
    q8_0[b].d = random_half();
    for (auto& q : q4_0[b].qs) q = static_cast<uint8_t>(byte(rng));
    for (auto& q : q4_1[b].qs) q = static_cast<uint8_t>(byte(rng));
    for (auto& q : q8_0[b].qs) q = static_cast<int8_t>(byte(rng) - 128);
  }
  const struct {
    DType type;
    const void* data;
  } cases[] = {{DType::q4_0, q4_0.data()}, {DType::q4_1, q4_1.data()}, {DType::q8_0, q8_0.data()}};
  for (const auto& c : cases) {
    std::vector<float> fast(kN, -1.0f), ref(kN, -2.0f);
    ASSERT_TRUE(dequantize_row_fast(c.type, c.data, fast.data(), kN)) << dtype_name(c.type);
    ASSERT_TRUE(dequantize_row(c.type, c.data, ref.data(), kN));
    EXPECT_EQ(std::memcmp(fast.data(), ref.data(), kN * sizeof(float)), 0) << dtype_name(c.type);
  }
  float y[32];
  EXPECT_FALSE(dequantize_row_fast(DType::q5_0, q4_1.data(), y, 32));  // not handled: the caller falls back
}

// f16 and bf16 rows (FloatLinear widens them for its tiles): every one of the
// 65,536 bit patterns, in a row whose length is not a multiple of the SIMD
// width, gives the reference's bits. NaNs need only stay NaN: vcvtph2ps quiets
// a signalling NaN, the portable conversion keeps its payload as it is.
TEST(Dequantize, FastHalfRowsAreTheReferenceBits) {
  constexpr int64_t kN = 65536 + 5;
  std::vector<uint16_t> halves(kN);
  for (int64_t i = 0; i < kN; ++i) halves[static_cast<size_t>(i)] = static_cast<uint16_t>(i * 40503u);
  for (DType type : {DType::f16, DType::bf16}) {
    std::vector<float> fast(kN + 1, -1.0f), ref(kN, -2.0f);  // [n + guard], [n]
    ASSERT_TRUE(dequantize_row_fast(type, halves.data(), fast.data(), kN)) << dtype_name(type);
    ASSERT_TRUE(dequantize_row(type, halves.data(), ref.data(), kN));
    for (int64_t i = 0; i < kN; ++i) {
      const auto at = static_cast<size_t>(i);
      if (std::isnan(ref[at])) {
        EXPECT_TRUE(std::isnan(fast[at])) << dtype_name(type) << " bits " << halves[at];
      } else {
        ASSERT_EQ(std::bit_cast<uint32_t>(fast[at]), std::bit_cast<uint32_t>(ref[at]))
            << dtype_name(type) << " bits " << halves[at];
      }
    }
    EXPECT_EQ(fast[kN], -1.0f) << dtype_name(type) << ": wrote past the row";
  }
}

// The fast K-quant rows (Q2_K to Q6_K) against the reference, bit for bit:
// random bytes for the quants and packed sub-block scales, random finite f16
// d and dmin (both signs, subnormals included), plus super-blocks with +-0,
// the smallest subnormal, the smallest normal and the largest f16 as d or
// dmin, all sub-block scales and mins 63, Q6_K scales -128 and 127, and all
// fifth (Q5_K) or high (Q6_K) bits set or clear; rows of 1 to 11 super-blocks.
// A guard past each row checks that the fast path writes exactly n values.
TEST(Dequantize, FastKQuantRowsAreTheReferenceBits) {
  std::mt19937 rng(23);
  auto random_half = [&] {
    uint16_t h;
    do h = static_cast<uint16_t>(rng()); while ((h & 0x7C00) == 0x7C00);  // no inf or NaN
    return h;
  };
  auto fill = [&](auto& block) {  // every byte random; d and dmin replaced below
    auto* p = reinterpret_cast<uint8_t*>(&block);
    for (size_t i = 0; i < sizeof block; ++i) p[i] = static_cast<uint8_t>(rng());
  };
  constexpr int64_t kRowBlocks[] = {1, 2, 6, 11};  // super-blocks per row
  constexpr uint16_t kEdgeHalves[] = {0x0001, 0x8001, 0x7BFF, 0xFBFF, 0x0000, 0x8000, 0x0400};
  constexpr size_t kEdges = std::size(kEdgeHalves);
  int64_t total = 0;
  for (int64_t nb : kRowBlocks) total += nb;
  std::vector<BlockQ4K> q4_k(static_cast<size_t>(total));
  std::vector<BlockQ5K> q5_k(q4_k.size());
  std::vector<BlockQ6K> q6_k(q4_k.size());
  std::vector<BlockQ2K> q2_k(q4_k.size());
  std::vector<BlockQ3K> q3_k(q4_k.size());
  for (size_t b = 0; b < q4_k.size(); ++b) {
    fill(q4_k[b]);
    fill(q5_k[b]);
    fill(q6_k[b]);
    fill(q2_k[b]);
    fill(q3_k[b]);
    q2_k[b].d = random_half();
    q2_k[b].dmin = random_half();
    q3_k[b].d = random_half();
    q4_k[b].d = random_half();
    q4_k[b].dmin = random_half();
    q5_k[b].d = random_half();
    q5_k[b].dmin = random_half();
    q6_k[b].d = random_half();
  }
  for (size_t e = 0; e < kEdges; ++e) {  // edge scales in the longest row
    const size_t b = q4_k.size() - 1 - e;
    q4_k[b].d = q5_k[b].d = q6_k[b].d = q2_k[b].d = q3_k[b].d = kEdgeHalves[e];
    q4_k[b].dmin = q5_k[b].dmin = q2_k[b].dmin = kEdgeHalves[(e + 3) % kEdges];
  }
  std::memset(q4_k[0].scales, 0xFF, sizeof q4_k[0].scales);  // all sc = mn = 63
  std::memset(q5_k[0].qh, 0xFF, sizeof q5_k[0].qh);          // every fifth bit set
  std::memset(q6_k[0].qh, 0x00, sizeof q6_k[0].qh);          // q = low nibble - 32
  q6_k[1].scales[0] = -128;
  q6_k[1].scales[15] = 127;

  const struct {
    DType type;
    const uint8_t* data;
    size_t block_bytes;
  } cases[] = {{DType::q4_k, reinterpret_cast<const uint8_t*>(q4_k.data()), sizeof(BlockQ4K)},
               {DType::q5_k, reinterpret_cast<const uint8_t*>(q5_k.data()), sizeof(BlockQ5K)},
               {DType::q6_k, reinterpret_cast<const uint8_t*>(q6_k.data()), sizeof(BlockQ6K)},
               {DType::q2_k, reinterpret_cast<const uint8_t*>(q2_k.data()), sizeof(BlockQ2K)},
               {DType::q3_k, reinterpret_cast<const uint8_t*>(q3_k.data()), sizeof(BlockQ3K)}};
  constexpr int kGuard = 8;
  for (const auto& c : cases) {
    const uint8_t* row = c.data;
    for (int64_t nb : kRowBlocks) {
      const int64_t n = nb * kSuperBlock;
      std::vector<float> fast(static_cast<size_t>(n + kGuard), -1.0f), ref(static_cast<size_t>(n), -2.0f);  // [n + guard], [n]
      ASSERT_TRUE(dequantize_row_fast(c.type, row, fast.data(), n)) << dtype_name(c.type);
      ASSERT_TRUE(dequantize_row(c.type, row, ref.data(), n));
      EXPECT_EQ(std::memcmp(fast.data(), ref.data(), static_cast<size_t>(n) * sizeof(float)), 0)
          << dtype_name(c.type) << ", row of " << nb << " super-blocks";
      for (int g = 0; g < kGuard; ++g) EXPECT_EQ(fast[static_cast<size_t>(n + g)], -1.0f) << dtype_name(c.type);
      row += static_cast<size_t>(nb) * c.block_bytes;
    }
  }
}

}  // namespace
}  // namespace tessera::ggml
