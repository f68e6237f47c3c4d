// The K-quant formats in the quantized domain: the per-element reading of a
// super-block against the reference dequantizer, Q8_K activations, the tile
// kernels (scalar against an f64 sum from the format's definition, every SIMD
// level against scalar) and KQuantLinear (against an f64 product, split and
// thread count).
//
// Tolerances: the integer sums are exact, so kernels differ only in the order
// of the f32 operations that apply the block scales: 1e-5 * sum(|w_i * x_i|).
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "formats.hpp"
#include "kquant_linear.hpp"
#include "low_bit_kquants.hpp"
#include "reference.hpp"
#include "repack.hpp"
#include "ggml_testing.hpp"

namespace tessera::ggml {
namespace {

using testing::random_bytes;
using testing::random_floats;

constexpr DType kKQuants[] = {DType::q2_k, DType::q3_k, DType::q4_k, DType::q5_k, DType::q6_k};
// The ones kquant_element reads (Q2_K and Q3_K are read by the gguf-py-checked
// dequantizer instead), and the ones with AMX panels (Q2_K and Q3_K run the
// groups there).
constexpr DType kElementKQuants[] = {DType::q4_k, DType::q5_k, DType::q6_k};
constexpr DType kPanelKQuants[] = {DType::q4_k, DType::q5_k, DType::q6_k};

// Rows of random super-blocks with d (and dmin) of either sign around 0.01.
// Block 0 of row 0 has every quant and scale at its largest value (Q3_K's
// scales at +31, one short of its largest magnitude, -32), the case where a
// 16-bit pair sum would overflow if the kernels' bounds were wrong.
std::vector<uint8_t> make_kquant_rows(DType type, int64_t rows, int64_t cols, uint32_t seed) {
  const size_t block_bytes = dtype_info(type).block_bytes;
  std::vector<uint8_t> w = random_bytes(rows * dtype_row_bytes(type, cols), seed);
  const auto scales = random_floats(2 * w.size() / block_bytes, seed + 1, 0.01f);
  for (size_t b = 0; b < w.size() / block_bytes; ++b) {
    uint8_t* blk = w.data() + b * block_bytes;
    if (b == 0) std::memset(blk, type == DType::q6_k ? 0x7F : 0xFF, block_bytes);
    testing::set_kquant_scales(type, blk, scales[2 * b], scales[2 * b + 1]);
  }
  return w;
}

std::vector<BlockQ8K> make_q8k_rows(int64_t rows, int64_t cols, uint32_t seed) {
  const auto f = random_floats(rows * cols, seed, 2.0f);
  std::vector<BlockQ8K> x(rows * cols / kSuperBlock);
  quantize_row_q8_k(f.data(), x.data(), rows * cols);
  // Row 0, block 0: the extremes, to meet the all-maximum weight block.
  for (int e = 0; e < kSuperBlock; ++e) x[0].qs[e] = (e % 2) ? 127 : -127;
  for (int g = 0; g < kSuperBlock / 16; ++g) x[0].bsums[g] = 0;
  return x;
}

float block_d(DType type, const uint8_t* blk) {
  uint16_t h;
  std::memcpy(&h, blk + (type == DType::q6_k ? offsetof(BlockQ6K, d) : offsetof(BlockQ4K, d)), 2);
  return f16_to_f32(h);
}

float block_dmin(DType type, const uint8_t* blk) {
  if (type == DType::q6_k) return 0.0f;
  uint16_t h;
  std::memcpy(&h, blk + offsetof(BlockQ4K, dmin), 2);
  return f16_to_f32(h);
}

// The weight value of element e, from kquant_element and the format's formula.
double weight_value(DType type, const uint8_t* blk, int e) {
  const KQuantElement el = kquant_element(type, blk, e);
  if (type == DType::q6_k) return static_cast<double>(block_d(type, blk)) * el.scale * (el.q - 32);
  return static_cast<double>(block_d(type, blk)) * el.scale * el.q -
         static_cast<double>(block_dmin(type, blk)) * el.offset;
}

// The 256 weight values of one super-block. Q2_K and Q3_K: the reference
// dequantizer's, which tests/data/kquant-vectors holds to gguf-py's values bit
// for bit (Q2_K's d * sc * q - dmin * m rounds once in f32: within 2^-24 relative).
void block_values(DType type, const uint8_t* blk, double* out) {  // out: [256]
  if (type == DType::q2_k || type == DType::q3_k) {
    float f[kSuperBlock];
    ASSERT_TRUE(dequantize_row(type, blk, f, kSuperBlock));
    for (int e = 0; e < kSuperBlock; ++e) out[e] = f[e];
    return;
  }
  for (int e = 0; e < kSuperBlock; ++e) out[e] = weight_value(type, blk, e);
}

TEST(KQuantElement, ReadsWhatTheReferenceDequantizerWrites) {
  for (DType type : kElementKQuants) {
    const auto w = make_kquant_rows(type, 1, 4 * kSuperBlock, 7);
    std::vector<float> y(4 * kSuperBlock);
    ASSERT_TRUE(dequantize_row(type, w.data(), y.data(), 4 * kSuperBlock));
    const size_t block_bytes = dtype_info(type).block_bytes;
    for (int b = 0; b < 4; ++b) {
      const uint8_t* blk = w.data() + b * block_bytes;
      for (int e = 0; e < kSuperBlock; ++e) {
        // The reference's own f32 steps: (d * scale) * q - dmin * offset, each
        // product exact, so one rounding; in double that rounding is absent.
        EXPECT_NEAR(weight_value(type, blk, e), y[b * kSuperBlock + e], 1e-6 * std::fabs(y[b * kSuperBlock + e]) + 1e-12)
            << dtype_name(type) << " block " << b << " element " << e;
      }
    }
  }
}

// The SIMD kernels' all-at-once reading of Q3_K's 6-bit scales against the
// one-at-a-time definition: every value of each of the 12 bytes, the others
// random, and 200 random sets.
TEST(Q3KScales, AllAtOnceAsOneByOne) {
  std::vector<std::vector<uint8_t>> cases;
  for (int at = 0; at < 12; ++at) {
    for (int v = 0; v < 256; ++v) {
      cases.push_back(random_bytes(12, static_cast<uint32_t>(at * 256 + v)));
      cases.back()[at] = static_cast<uint8_t>(v);
    }
  }
  for (uint32_t seed = 0; seed < 200; ++seed) cases.push_back(random_bytes(12, seed + 5000));
  for (const auto& scales : cases) {
    uint32_t words[4];
    q3_k_biased_scale_words(scales.data(), words);
    uint8_t biased[16];
    std::memcpy(biased, words, sizeof biased);  // little-endian, as the kernels read them
    for (int s = 0; s < 16; ++s) ASSERT_EQ(biased[s] - 32, q3_k_scale(scales.data(), s)) << "scale " << s;
  }
}

TEST(Q8K, WithinHalfAStepWithSumsPerSixteen) {
  constexpr int64_t kN = 3 * kSuperBlock;
  const auto x = random_floats(kN, 3, 4.0f);
  std::vector<BlockQ8K> q(kN / kSuperBlock);
  std::vector<float> y(kN);
  quantize_row_q8_k(x.data(), q.data(), kN);
  dequantize_row_q8_k(q.data(), y.data(), kN);
  for (int64_t b = 0; b < kN / kSuperBlock; ++b) {
    float amax = 0;
    for (int e = 0; e < kSuperBlock; ++e) amax = std::max(amax, std::fabs(x[b * kSuperBlock + e]));
    EXPECT_FLOAT_EQ(q[b].d, amax / 127.0f);
    for (int e = 0; e < kSuperBlock; ++e) EXPECT_LE(std::fabs(y[b * kSuperBlock + e] - x[b * kSuperBlock + e]), 0.5f * q[b].d * 1.0001f);
    for (int g = 0; g < kSuperBlock / 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += q[b].qs[16 * g + j];
      EXPECT_EQ(q[b].bsums[g], sum) << "block " << b << " group " << g;
    }
  }
}

KQuantTileFn tile_of(const KernelTable& k, DType type) {
  switch (type) {
    case DType::q2_k: return k.q2_k;
    case DType::q3_k: return k.q3_k;
    case DType::q4_k: return k.q4_k;
    case DType::q5_k: return k.q5_k;
    default: return k.q6_k;
  }
}

// sum over the row pair of w * x, and of |w * x|, in double from the definitions.
void f64_dot(DType type, const uint8_t* w_row, const BlockQ8K* x_row, int64_t nb, double* dot, double* abs_dot) {
  const size_t block_bytes = dtype_info(type).block_bytes;
  *dot = *abs_dot = 0;
  for (int64_t b = 0; b < nb; ++b) {
    double w[kSuperBlock];
    block_values(type, w_row + b * block_bytes, w);
    for (int e = 0; e < kSuperBlock; ++e) {
      const double p = w[e] * x_row[b].d * x_row[b].qs[e];
      *dot += p;
      *abs_dot += std::fabs(p);
    }
  }
}

// The scalar kernels against the format's definition (they are what the SIMD
// levels are then compared with). No bsums are used here, so a wrong Q8_K sum
// or a wrong unpacked layout shows.
TEST(KQuantTiles, ScalarIsTheF64SumOfTheDefinition) {
  const KernelTable& k = scalar_kernel_table();
  for (DType type : kKQuants) {
    for (int64_t nb : {1, 3}) {
      const int64_t cols = nb * kSuperBlock;
      const auto w = make_kquant_rows(type, kMaxTileW, cols, static_cast<uint32_t>(nb));
      const auto x = make_q8k_rows(kMaxTileX, cols, static_cast<uint32_t>(nb + 10));
      const size_t row_bytes = dtype_row_bytes(type, cols);
      float y[kMaxTileX][kMaxTileW];
      tile_of(k, type)(w.data(), row_bytes, kMaxTileW, x.data(), nb, kMaxTileX, nb, &y[0][0], kMaxTileW);
      for (int xi = 0; xi < kMaxTileX; ++xi) {
        for (int wi = 0; wi < kMaxTileW; ++wi) {
          double want, abs_sum;
          f64_dot(type, w.data() + wi * row_bytes, x.data() + xi * nb, nb, &want, &abs_sum);
          EXPECT_NEAR(y[xi][wi], want, 1e-5 * abs_sum + 1e-6) << dtype_name(type) << " nb=" << nb << " (" << xi << "," << wi << ")";
        }
      }
    }
  }
}

class KQuantLevel : public ::testing::TestWithParam<IsaLevel> {};

TEST_P(KQuantLevel, TilesMatchScalar) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  const KernelTable& simd = *kernels_for(GetParam());
  const KernelTable& ref = scalar_kernel_table();
  constexpr int kRows = 7;  // odd: partial tiles of every height
  for (DType type : kKQuants) {
    for (int64_t nb : {1, 2, 6}) {
      const int64_t cols = nb * kSuperBlock;
      const auto w = make_kquant_rows(type, kRows, cols, static_cast<uint32_t>(nb * 3));
      const auto x = make_q8k_rows(kMaxTileX, cols, static_cast<uint32_t>(nb * 5));
      const size_t row_bytes = dtype_row_bytes(type, cols);
      for (int nw = 1; nw <= kMaxTileW; ++nw) {
        for (int nx = 1; nx <= kMaxTileX; ++nx) {
          for (int w0 : {0, kRows - nw}) {  // first rows, and last rows (reads end at the buffer's end)
            float want[kMaxTileX][kMaxTileW], got[kMaxTileX][kMaxTileW];
            tile_of(ref, type)(w.data() + w0 * row_bytes, row_bytes, nw, x.data(), nb, nx, nb, &want[0][0], kMaxTileW);
            tile_of(simd, type)(w.data() + w0 * row_bytes, row_bytes, nw, x.data(), nb, nx, nb, &got[0][0], kMaxTileW);
            for (int xi = 0; xi < nx; ++xi) {
              for (int wi = 0; wi < nw; ++wi) {
                double unused, abs_sum;
                f64_dot(type, w.data() + (w0 + wi) * row_bytes, x.data() + xi * nb, nb, &unused, &abs_sum);
                EXPECT_NEAR(got[xi][wi], want[xi][wi], 1e-5 * abs_sum + 1e-6)
                    << dtype_name(type) << " nb=" << nb << " tile " << nw << "x" << nx << " w0=" << w0;
              }
            }
          }
        }
      }
    }
  }
}

// The K-quants repacked 8 rows at a time (BlockQ2Kx8 .. BlockQ6Kx8): the
// scalar group kernel against the f64 sum of the ggml rows it was repacked
// from (so a wrong repacking or a wrong kernel shows), and every SIMD level
// against the scalar group kernel bit for bit (KQuantGroupFn fixes the f32
// steps). Second group of two, every activation count up to kMaxRepackX.
std::vector<uint8_t> repack_kquant(DType type, const std::vector<uint8_t>& w, int64_t rows, int64_t nb) {
  std::vector<uint8_t> packed(rows / kRepackRows * nb * kquant_x8_block_bytes(type));
  repack_kquant_x8(type, w.data(), rows, nb, packed.data());
  return packed;
}

TEST_P(KQuantLevel, RepackedGroupsMatchTheirRows) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  const KernelTable& simd = *kernels_for(GetParam());
  const KernelTable& ref = scalar_kernel_table();
  constexpr int kRows = 2 * kRepackRows;
  for (DType type : kKQuants) {
    ASSERT_NE(kquant_group_kernel(simd, type), nullptr) << simd.name;
    for (int64_t nb : {1, 2, 6}) {
      const int64_t cols = nb * kSuperBlock;
      const auto w = make_kquant_rows(type, kRows, cols, static_cast<uint32_t>(nb * 11));
      const auto x = make_q8k_rows(kMaxRepackX, cols, static_cast<uint32_t>(nb * 13));
      const auto packed = repack_kquant(type, w, kRows, nb);
      const uint8_t* second = packed.data() + packed.size() / 2;
      const size_t row_bytes = dtype_row_bytes(type, cols);
      for (int nx = 1; nx <= kMaxRepackX; ++nx) {
        std::vector<float> want(kMaxRepackX * kRepackRows), got(kMaxRepackX * kRepackRows);
        kquant_group_kernel(ref, type)(second, nb, x.data(), nb, nx, want.data(), kRepackRows);
        kquant_group_kernel(simd, type)(second, nb, x.data(), nb, nx, got.data(), kRepackRows);
        for (int xi = 0; xi < nx; ++xi) {
          for (int r = 0; r < kRepackRows; ++r) {
            const int i = xi * kRepackRows + r;
            double dot, abs_sum;
            f64_dot(type, w.data() + (kRepackRows + r) * row_bytes, x.data() + xi * nb, nb, &dot, &abs_sum);
            EXPECT_NEAR(want[i], dot, 1e-5 * abs_sum + 1e-6) << dtype_name(type) << " nb=" << nb << " (" << xi << "," << r << ")";
            EXPECT_EQ(got[i], want[i]) << simd.name << " " << dtype_name(type) << " nb=" << nb << " nx=" << nx << " (" << xi
                                       << "," << r << ")";
          }
        }
      }
    }
  }
}

// Every quant and scale at its maximum against activations of -128 (the
// largest magnitude Q8_K holds) or 127, the weights of `rows` rows (Q6_K's
// scales at q6_scale; the minimums of Q2_K, 15 each, and of Q4_K/Q5_K, 63
// each, summed at their extreme too with dmin 1) repacked, nx activation
// rows, and the output every row and column must then give, exact in f32.
struct ExtremeCase {
  std::vector<uint8_t> packed;
  std::vector<BlockQ8K> x;
  double want;
};
ExtremeCase extreme_case(DType type, int rows, int nx, int64_t nb, int q6_scale, int8_t q) {
  std::vector<uint8_t> w(rows * dtype_row_bytes(type, nb * kSuperBlock), 0xFF);
  const bool minimums = type == DType::q2_k || type == DType::q4_k || type == DType::q5_k;
  testing::set_every_kquant_scale(type, w.data(), w.size(), 1.0f, minimums ? 1.0f : 0.0f);
  if (type == DType::q6_k) {  // 0xFF's scales would be -1
    for (size_t b = 0; b < w.size() / sizeof(BlockQ6K); ++b)
      std::memset(reinterpret_cast<BlockQ6K*>(w.data())[b].scales, static_cast<uint8_t>(q6_scale), kSuperBlock / 16);
  }
  std::vector<BlockQ8K> x(static_cast<size_t>(nx * nb));
  for (auto& blk : x) {
    blk.d = 1.0f;
    std::memset(blk.qs, static_cast<uint8_t>(q), sizeof blk.qs);
    for (auto& s : blk.bsums) s = static_cast<int16_t>(16 * q);
  }
  // Q4_K: (63 * 15 - 63) * q per element; Q5_K: (63 * 31 - 63) * q; Q6_K: scale * (63 - 32) * q;
  // Q2_K: (15 * 3 - 15) * q; Q3_K: 31 * (7 - 4) * q.
  const double per_element = type == DType::q4_k   ? (63.0 * 15 - 63) * q
                             : type == DType::q5_k ? (63.0 * 31 - 63) * q
                             : type == DType::q6_k ? static_cast<double>(q6_scale) * 31 * q
                             : type == DType::q2_k ? (15.0 * 3 - 15) * q
                                                   : 31.0 * 3 * q;
  return {repack_kquant(type, w, rows, nb), std::move(x), per_element * static_cast<double>(nb * kSuperBlock)};
}

// Q6_K at its largest scale and its most negative (the panels' top base-4
// digit at -2); one case for the others.
std::vector<int> extreme_q6_scales(DType type) {
  return type == DType::q6_k ? std::vector<int>{127, -128} : std::vector<int>{0};
}

// Every extreme case of `type` over 3 super-blocks, `rows` weight rows and
// nx activation rows: run(c, y) writes the kernel's [nx, rows] output for
// case c into y, and every output must be the case's exact sum.
template <class Run>
void expect_extremes_sum_exactly(const KernelTable& k, DType type, int rows, int nx, Run run) {
  constexpr int64_t nb = 3;
  for (int q6_scale : extreme_q6_scales(type)) {
    for (int8_t q : {int8_t{-128}, int8_t{127}}) {
      const ExtremeCase c = extreme_case(type, rows, nx, nb, q6_scale, q);
      std::vector<float> y(static_cast<size_t>(nx * rows));
      run(c, nb, y.data());
      for (float v : y)
        EXPECT_EQ(v, c.want) << k.name << " " << dtype_name(type) << " q=" << int(q) << " Q6_K scale " << q6_scale;
    }
  }
}

// The 16-bit run sums of the group kernels reach their bounds
// (kquant_groups_avx2.cpp), and any that wrapped would show at once.
TEST_P(KQuantLevel, RepackedGroupsSumExactlyAtTheExtremes) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  const KernelTable& k = *kernels_for(GetParam());
  for (DType type : kKQuants) {
    expect_extremes_sum_exactly(k, type, kRepackRows, kMaxRepackX, [&](const ExtremeCase& c, int64_t nb, float* y) {
      kquant_group_kernel(k, type)(c.packed.data(), nb, c.x.data(), nb, kMaxRepackX, y, kRepackRows);
    });
  }
}

KQuantPanelFn panel_of(const KernelTable& k, DType type) {
  return type == DType::q4_k ? k.q4_k_panel : type == DType::q5_k ? k.q5_k_panel : k.q6_k_panel;
}

// Activation rows x [nx, nb] as the panels read them, tile_rows rows of room.
struct PanelInput {
  HostBuffer memory;
  PanelActivations a;
};
PanelInput panel_input(const std::vector<BlockQ8K>& x, int nx, int64_t nb, size_t tile_rows) {
  PanelInput in{HostBuffer(panel_activation_bytes(nb, tile_rows)), {}};
  in.a = panel_activations(in.memory.data(), nb, tile_rows);
  for (int i = 0; i < nx; ++i) panel_quants(x.data() + i * nb, nb, i, in.a);
  return in;
}

// The scalar group kernel over both groups of a panel, 8 activation rows at a
// time: what a panel must give, bit for bit.
std::vector<float> panel_by_groups(DType type, const uint8_t* panel, size_t group_bytes, int64_t nb,
                                   const std::vector<BlockQ8K>& x, int nx) {
  const KernelTable& ref = scalar_kernel_table();
  std::vector<float> want(static_cast<size_t>(nx) * kPanelRows);
  for (int g = 0; g < 2; ++g)
    for (int x0 = 0; x0 < nx; x0 += kMaxRepackX)
      kquant_group_kernel(ref, type)(panel + g * group_bytes, nb, x.data() + x0 * nb, nb, std::min(kMaxRepackX, nx - x0),
                          want.data() + x0 * kPanelRows + g * kRepackRows, kPanelRows);
  return want;
}

// The AMX panels (16 weight rows by 16, 32 or 48 activation rows) against the
// scalar group kernel on their two groups, bit for bit. The levels without
// panels say so and pass.
TEST_P(KQuantLevel, PanelsMatchTheScalarGroups) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  const KernelTable& k = *kernels_for(GetParam());
  for (DType type : kPanelKQuants) {
    if (panel_of(k, type) == nullptr) {
      ASSERT_NE(GetParam(), IsaLevel::amx) << "the amx table lacks the " << dtype_name(type) << " panel";
      GTEST_SKIP() << k.name << " has no K-quant panels (the amx level's only)";
    }
    for (int64_t nb : {1, 2, 6}) {
      const int64_t cols = nb * kSuperBlock;
      const auto w = make_kquant_rows(type, 3 * kRepackRows, cols, static_cast<uint32_t>(nb * 17));
      const auto packed = repack_kquant(type, w, 3 * kRepackRows, nb);
      const size_t group_bytes = packed.size() / 3;
      for (int nx : {16, 32, 48}) {
        const auto x = make_q8k_rows(nx, cols, static_cast<uint32_t>(nb * 19 + nx));
        // The second and third groups: a panel need not start at the first.
        const uint8_t* panel = packed.data() + group_bytes;
        const auto want = panel_by_groups(type, panel, group_bytes, nb, x, nx);
        std::vector<float> got(want.size(), NAN);
        // Tiles further apart than the rows: the stride is the panel's to keep.
        const size_t tile_rows = static_cast<size_t>(nx) + kPanelTileX;
        const PanelInput in = panel_input(x, nx, nb, tile_rows);
        panel_of(k, type)(panel, group_bytes, nb, x.data(), nb, in.a, nx, got.data(), kPanelRows);
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_EQ(got[i], want[i]) << k.name << " " << dtype_name(type) << " nb=" << nb << " nx=" << nx << " ("
                                     << i / kPanelRows << "," << i % kPanelRows << ")";
      }
    }
  }
}

// As RepackedGroupsSumExactlyAtTheExtremes, for the panels: the i32 products
// of the tiles and their scaling reach their largest magnitudes.
TEST_P(KQuantLevel, PanelsSumExactlyAtTheExtremes) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  const KernelTable& k = *kernels_for(GetParam());
  for (DType type : kPanelKQuants) {
    if (panel_of(k, type) == nullptr) {
      ASSERT_NE(GetParam(), IsaLevel::amx) << "the amx table lacks the " << dtype_name(type) << " panel";
      GTEST_SKIP() << k.name << " has no K-quant panels (the amx level's only)";
    }
    expect_extremes_sum_exactly(k, type, kPanelRows, kPanelTileX, [&](const ExtremeCase& c, int64_t nb, float* y) {
      const PanelInput in = panel_input(c.x, kPanelTileX, nb, kPanelTileX);
      panel_of(k, type)(c.packed.data(), c.packed.size() / 2, nb, c.x.data(), nb, in.a, kPanelTileX, y, kPanelRows);
    });
  }
}

// The pair kernels (two groups as one, kquant_pairs_avx512vnni.cpp) against
// the scalar group kernel on their two groups, bit for bit, for every count
// of activation rows a call takes. The levels without them say so and pass.
TEST_P(KQuantLevel, PairsMatchTheScalarGroups) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  const KernelTable& k = *kernels_for(GetParam());
  int compared = 0;
  for (DType type : kKQuants) {
    if (kquant_pair_kernel(k, type) == nullptr) {
      ASSERT_NE(GetParam(), IsaLevel::avx512_vnni) << "the avx512_vnni table lacks the " << dtype_name(type) << " pair";
      continue;
    }
    for (int64_t nb : {1, 2, 6}) {
      const int64_t cols = nb * kSuperBlock;
      const auto w = make_kquant_rows(type, 3 * kRepackRows, cols, static_cast<uint32_t>(nb * 23));
      const auto packed = repack_kquant(type, w, 3 * kRepackRows, nb);
      const size_t group_bytes = packed.size() / 3;
      const auto x = make_q8k_rows(kMaxRepackX, cols, static_cast<uint32_t>(nb * 29));
      const uint8_t* pair = packed.data() + group_bytes;  // the second and third groups: any two in a row
      for (int nx = 1; nx <= kMaxRepackX; ++nx) {
        const auto want = panel_by_groups(type, pair, group_bytes, nb, x, nx);
        std::vector<float> got(want.size(), NAN);
        kquant_pair_kernel(k, type)(pair, group_bytes, nb, x.data(), nb, nx, got.data(), kPanelRows);
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_EQ(got[i], want[i]) << k.name << " " << dtype_name(type) << " nb=" << nb << " nx=" << nx << " ("
                                     << i / kPanelRows << "," << i % kPanelRows << ")";
      }
    }
    ++compared;
  }
  if (compared == 0) GTEST_SKIP() << k.name << " has no K-quant pair kernels (AVX-512 VNNI's)";
}

// As RepackedGroupsSumExactlyAtTheExtremes, for the pairs: the chains of
// products reach their largest magnitudes before their scales apply.
TEST_P(KQuantLevel, PairsSumExactlyAtTheExtremes) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  const KernelTable& k = *kernels_for(GetParam());
  int compared = 0;
  for (DType type : kKQuants) {
    if (kquant_pair_kernel(k, type) == nullptr) continue;
    expect_extremes_sum_exactly(k, type, kPanelRows, kMaxRepackX, [&](const ExtremeCase& c, int64_t nb, float* y) {
      kquant_pair_kernel(k, type)(c.packed.data(), c.packed.size() / 2, nb, c.x.data(), nb, kMaxRepackX, y,
                                  kPanelRows);
    });
    ++compared;
  }
  if (compared == 0) GTEST_SKIP() << k.name << " has no K-quant pair kernels (AVX-512 VNNI's)";
}

INSTANTIATE_TEST_SUITE_P(Levels, KQuantLevel, ::testing::ValuesIn(testing::all_levels()), testing::level_param_name);

// Every level's whole Linear (panels where the level has them, repacked
// groups, one or two activation terms) gives the scalar level's bits, for
// batches that leave every kind of remainder. (The ggml-layout tiles past the
// last group are held to a tolerance instead: KQuantLevel.TilesMatchScalar.)
TEST(KQuantLinear, EveryLevelGivesTheScalarLevelsBits) {
  constexpr int64_t kOut = 2 * kPanelRows + kRepackRows, kIn = 2 * kSuperBlock;  // two panels and a lone group
  for (DType type : kKQuants) {
    const auto w = make_kquant_rows(type, kOut, kIn, 31);
    for (ActivationTerms terms : {ActivationTerms::q8, ActivationTerms::q8x2}) {
      for (int64_t n : {1, 9, 11, 16, 37, 70}) {  // 9, 11 (q8): tiles of 1 and 3 rows against cached weights
        const auto x = random_floats(n * kIn, static_cast<uint32_t>(n + 33), 1.5f);
        std::vector<float> want(n * kOut);
        {
          testing::ScopedLevel scalar(IsaLevel::scalar);
          KQuantLinear linear(w.data(), type, kOut, kIn, {}, true, nullptr, terms);
          ASSERT_TRUE(linear.forward(x.data(), want.data(), n).ok());
        }
        for (IsaLevel level : testing::all_levels()) {
          testing::ScopedLevel forced(level);
          if (!forced.ok()) {
            if (type == DType::q4_k && n == 1 && terms == ActivationTerms::q8)
              std::printf("[ info ] this CPU lacks %s: not compared\n", std::string(isa_level_name(level)).c_str());
            continue;
          }
          // One thread and two: with more threads than groups of columns a
          // thread gets a single group, and the pairs and panels never run
          // (5 threads would do that to these 40 columns).
          for (const int threads : {1, 2}) {
            const int saved = omp_get_max_threads();
            omp_set_num_threads(threads);
            KQuantLinear linear(w.data(), type, kOut, kIn, {}, true, nullptr, terms);
            std::vector<float> got(n * kOut, NAN);
            const auto s = linear.forward(x.data(), got.data(), n);
            omp_set_num_threads(saved);
            ASSERT_TRUE(s.ok());
            for (int64_t i = 0; i < n * kOut; ++i)
              ASSERT_EQ(got[i], want[i]) << isa_level_name(level) << " " << dtype_name(type) << " terms "
                                         << static_cast<int>(terms) << " n=" << n << " threads " << threads
                                         << " at " << i;
          }
        }
      }
    }
  }
}

// One Linear kept across calls whose level and row count change (the
// panels' copy of the activations is sized and filled per call: a panel
// call, then a level without panels, then more rows than the first call):
// each call gives what a fresh Linear gives at the scalar level.
TEST(KQuantLinear, OneLinearAcrossLevelsAndBatchSizesKeepsTheBits) {
  constexpr int64_t kOut = 2 * kPanelRows, kIn = 2 * kSuperBlock;
  const struct {
    IsaLevel level;
    int64_t n;
  } calls[] = {{IsaLevel::amx, 16}, {IsaLevel::avx512_vnni, 64}, {IsaLevel::amx, 1}, {IsaLevel::amx, 70},
               {IsaLevel::avx2, 33}, {IsaLevel::amx, 48}};
  for (DType type : {DType::q4_k, DType::q6_k}) {
    const auto w = make_kquant_rows(type, kOut, kIn, 41);
    for (ActivationTerms terms : {ActivationTerms::q8, ActivationTerms::q8x2}) {
      KQuantLinear kept(w.data(), type, kOut, kIn, {}, true, nullptr, terms);
      for (const auto& call : calls) {
        const auto x = random_floats(call.n * kIn, static_cast<uint32_t>(call.n + 7), 1.5f);
        std::vector<float> want(call.n * kOut), got(call.n * kOut, NAN);
        {
          testing::ScopedLevel scalar(IsaLevel::scalar);
          KQuantLinear fresh(w.data(), type, kOut, kIn, {}, true, nullptr, terms);
          ASSERT_TRUE(fresh.forward(x.data(), want.data(), call.n).ok());
        }
        testing::ScopedLevel forced(call.level);
        if (!forced.ok()) continue;  // a level this CPU lacks: EveryLevelGivesTheScalarLevelsBits says which
        ASSERT_TRUE(kept.forward(x.data(), got.data(), call.n).ok());
        for (int64_t i = 0; i < call.n * kOut; ++i)
          ASSERT_EQ(got[i], want[i]) << isa_level_name(call.level) << " " << dtype_name(type) << " terms "
                                     << static_cast<int>(terms) << " n=" << call.n << " at " << i;
      }
    }
  }
}

// Against an f64 product of the dequantized weights and the unquantized
// activations: the error is the activations' rounding to 8 bits (half a step
// of max|x| / 127 over each 256, plus margin) and f32 summation.
TEST(KQuantLinear, ForwardMatchesTheF64Product) {
  constexpr int64_t kOut = 23, kIn = 2 * kSuperBlock;  // two repacked groups of 8, then tiles of 4 and 3
  for (DType type : kKQuants) {
    const auto w = make_kquant_rows(type, kOut, kIn, 21);
    std::vector<float> wf(kOut * kIn);
    for (int64_t r = 0; r < kOut; ++r)
      ASSERT_TRUE(dequantize_row(type, w.data() + r * dtype_row_bytes(type, kIn), wf.data() + r * kIn, kIn));
    const auto bias = random_floats(kOut, 22);
    for (ActivationTerms terms : {ActivationTerms::q8, ActivationTerms::q8x2}) {  // q8x2's bound is q8's, with room
      KQuantLinear linear(w.data(), type, kOut, kIn, bias, true, nullptr, terms);
      for (int64_t n : {1, 5, 70}) {  // 70: two activation chunks
        const auto x = random_floats(n * kIn, static_cast<uint32_t>(n + 23), 1.5f);
        std::vector<float> y(n * kOut, NAN);
        ASSERT_TRUE(linear.forward(x.data(), y.data(), n).ok());
        for (int64_t i = 0; i < n; ++i) {
          const float* xr = x.data() + i * kIn;
          for (int64_t r = 0; r < kOut; ++r) {
            double ref = bias[r], abs_sum = 0, quant_bound = 0;
            for (int64_t b = 0; b < kIn / kSuperBlock; ++b) {
              float amax = 0;
              for (int e = 0; e < kSuperBlock; ++e) amax = std::max(amax, std::fabs(xr[b * kSuperBlock + e]));
              for (int e = 0; e < kSuperBlock; ++e) {
                const int64_t c = b * kSuperBlock + e;
                ref += static_cast<double>(wf[r * kIn + c]) * xr[c];
                abs_sum += std::fabs(static_cast<double>(wf[r * kIn + c]) * xr[c]);
                quant_bound += std::fabs(wf[r * kIn + c]) * 0.51 * amax / 127.0;
              }
            }
            ASSERT_NEAR(y[i * kOut + r], ref, quant_bound + 1e-5 * abs_sum + 1e-5)
                << dtype_name(type) << " terms " << static_cast<int>(terms) << " n=" << n << " row " << i << " out " << r;
          }
        }
      }
    }
  }
}

TEST(KQuantLinear, SplitAndThreadCountGiveTheSameBits) {
  constexpr int64_t kOut = 30, kIn = 3 * kSuperBlock;
  for (DType type : kKQuants) {
    const auto w = make_kquant_rows(type, kOut, kIn, 41);
    KQuantLinear linear(w.data(), type, kOut, kIn, random_floats(kOut, 42));
    ASSERT_TRUE(linear.splits());
    const int64_t a = linear.column_alignment();
    for (int64_t n : {1, 6}) {
      const auto x = random_floats(n * kIn, static_cast<uint32_t>(43 + n));
      std::vector<float> one(n * kOut), two(n * kOut), split(n * kOut, -99.0f);
      const int saved = omp_get_max_threads();
      omp_set_num_threads(1);
      ASSERT_TRUE(linear.forward(x.data(), one.data(), n).ok());
      omp_set_num_threads(2);
      ASSERT_TRUE(linear.forward(x.data(), two.data(), n).ok());
      omp_set_num_threads(saved);
      ASSERT_TRUE(linear.prepare(x.data(), n).ok());
      linear.compute(split.data(), 2 * a, kOut);
      linear.compute(split.data(), 0, 2 * a);
      for (int64_t i = 0; i < n * kOut; ++i) {
        ASSERT_EQ(one[i], two[i]) << dtype_name(type) << " n=" << n << " at " << i;
        ASSERT_EQ(one[i], split[i]) << dtype_name(type) << " n=" << n << " at " << i;
      }
    }
  }
}

TEST(KQuantLinear, RefusesWhatItCannotRun) {
  const auto w = make_kquant_rows(DType::q4_k, 4, kSuperBlock, 1);
  EXPECT_THROW(KQuantLinear(w.data(), DType::q4_1, 4, kSuperBlock, {}), std::invalid_argument);
  EXPECT_THROW(KQuantLinear(w.data(), DType::q4_k, 4, 128, {}), std::invalid_argument);
  KQuantLinear linear(w.data(), DType::q4_k, 4, kSuperBlock, {});
  std::vector<float> x(kSuperBlock), y(4);
  EXPECT_EQ(linear.forward(nullptr, y.data(), 1).code(), StatusCode::invalid_argument);
  EXPECT_EQ(linear.forward(x.data(), y.data(), -1).code(), StatusCode::invalid_argument);
  EXPECT_TRUE(linear.forward(x.data(), y.data(), 0).ok());
  EXPECT_EQ(linear.prepare(nullptr, 1).code(), StatusCode::invalid_argument);
}

}  // namespace
}  // namespace tessera::ggml
