// Every SIMD kernel against the scalar reference, per format, on random data.
//
// Tolerances: integer block sums must be exact (checked with unit scales, where
// the whole result is an integer); with real scales the kernels differ from the
// scalar code only in the order of f32 additions, so the difference is bounded
// by 1e-5 * sum(|w_i * x_i|) (f32 epsilon 1.2e-7 times a few hundred blocks of
// reordering, with margin).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "dequantize_fast.hpp"
#include "quant_linear.hpp"
#include "reference.hpp"
#include "repack.hpp"
#include "ggml_testing.hpp"

namespace tessera::ggml {
namespace {

using testing::random_bytes;
using testing::random_floats;

struct Format {
  const char* name;
  DType type;
  QuantTileFn KernelTable::*tile;
};

const Format kFormats[] = {
    {"q4_0", DType::q4_0, &KernelTable::q4_0},
    {"q4_1", DType::q4_1, &KernelTable::q4_1},
    {"q8_0", DType::q8_0, &KernelTable::q8_0},
    {"q5_0", DType::q5_0, &KernelTable::q5_0},
    {"q5_1", DType::q5_1, &KernelTable::q5_1},
};

// Weight rows made by quantizing random floats with the reference quantizer.
std::vector<uint8_t> make_weights(DType type, int rows, int64_t cols, uint32_t seed) {
  const auto f = random_floats(static_cast<size_t>(rows * cols), seed);
  const size_t row_bytes = dtype_row_bytes(type, cols);
  std::vector<uint8_t> w(rows * row_bytes);
  for (int r = 0; r < rows; ++r) {
    void* dst = w.data() + r * row_bytes;
    const float* src = f.data() + r * cols;
    if (type == DType::q4_0) quantize_row_q4_0(src, static_cast<BlockQ4_0*>(dst), cols);
    if (type == DType::q4_1) quantize_row_q4_1(src, static_cast<BlockQ4_1*>(dst), cols);
    if (type == DType::q8_0) quantize_row_q8_0(src, static_cast<BlockQ8_0*>(dst), cols);
    if (type == DType::q5_0) quantize_row_q5_0(src, static_cast<BlockQ5_0*>(dst), cols);
    if (type == DType::q5_1) quantize_row_q5_1(src, static_cast<BlockQ5_1*>(dst), cols);
  }
  return w;
}

std::vector<BlockQ8_1> make_activations(int rows, int64_t cols, uint32_t seed) {
  const auto f = random_floats(static_cast<size_t>(rows * cols), seed, 2.0f);
  std::vector<BlockQ8_1> x(rows * cols / 32);
  for (int r = 0; r < rows; ++r) quantize_row_q8_1(f.data() + r * cols, x.data() + r * cols / 32, cols);
  return x;
}

// sum |w_i * x_i| over a row pair, from the dequantized blocks: the scale of
// the rounding error of any summation order.
double abs_dot(DType type, const uint8_t* w, const BlockQ8_1* x, int64_t cols) {
  std::vector<float> wf(cols), xf(cols);
  dequantize_row(type, w, wf.data(), cols);
  dequantize_row_q8_1(x, xf.data(), cols);
  double s = 0;
  for (int64_t i = 0; i < cols; ++i) s += std::fabs(static_cast<double>(wf[i]) * xf[i]);
  return s;
}

class KernelLevel : public ::testing::TestWithParam<IsaLevel> {};

TEST_P(KernelLevel, QuantTilesMatchScalar) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  const KernelTable& simd = *kernels_for(GetParam());
  const KernelTable& ref = scalar_kernel_table();
  constexpr int kRows = 7;  // odd: partial tiles of every height
  for (const Format& f : kFormats) {
    for (int64_t nb : {1, 2, 3, 18, 49}) {
      const int64_t cols = nb * 32;
      const auto w = make_weights(f.type, kRows, cols, static_cast<uint32_t>(nb * 13 + 1));
      const auto x = make_activations(kMaxTileX, cols, static_cast<uint32_t>(nb * 17 + 2));
      const size_t row_bytes = dtype_row_bytes(f.type, cols);
      for (int nw = 1; nw <= kMaxTileW; ++nw) {
        for (int nx = 1; nx <= kMaxTileX; ++nx) {
          for (int w0 : {0, kRows - nw}) {  // first rows and last rows (reads end at the buffer's end)
            float want[kMaxTileX][kMaxTileW], got[kMaxTileX][kMaxTileW];
            (ref.*f.tile)(w.data() + w0 * row_bytes, row_bytes, nw, x.data(), nb, nx, nb, &want[0][0], kMaxTileW);
            (simd.*f.tile)(w.data() + w0 * row_bytes, row_bytes, nw, x.data(), nb, nx, nb, &got[0][0], kMaxTileW);
            for (int xi = 0; xi < nx; ++xi) {
              for (int wi = 0; wi < nw; ++wi) {
                const double tol = 1e-5 * abs_dot(f.type, w.data() + (w0 + wi) * row_bytes, x.data() + xi * nb, cols) + 1e-6;
                EXPECT_NEAR(got[xi][wi], want[xi][wi], tol)
                    << f.name << " nb=" << nb << " tile " << nw << "x" << nx << " w0=" << w0 << " at (" << xi << "," << wi << ")";
              }
            }
          }
        }
      }
    }
  }
}

// With every scale 1 and no minimum the result is the integer sum itself,
// which is small enough (< 2^24) to be exact in f32: any lost or saturated
// product shows up as an inexact value.
TEST_P(KernelLevel, IntegerSumsExact) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  const KernelTable& simd = *kernels_for(GetParam());
  constexpr int64_t nb = 9;
  constexpr uint16_t kOne = 0x3C00;
  auto bytes = random_bytes(nb * 36 * 2, 99);
  std::vector<BlockQ8_1> x(nb);
  for (int64_t b = 0; b < nb; ++b) {
    x[b].d = kOne;
    int sum = 0;
    for (int j = 0; j < 32; ++j) {
      int v = static_cast<int8_t>(bytes[b * 32 + j]);
      if (v == -128) v = -127;  // the quantizer never produces -128
      if (b == 0) v = (j % 2) ? -127 : 127;  // extremes: the saturation-prone case
      x[b].qs[j] = static_cast<int8_t>(v);
      sum += v;
    }
    x[b].s = f32_to_f16(static_cast<float>(sum));  // only meets m = 0 below: adds nothing
  }
  std::vector<BlockQ8_0> w8(nb);
  std::vector<BlockQ4_0> w40(nb);
  std::vector<BlockQ4_1> w41(nb);
  int64_t want8 = 0, want40 = 0, want41 = 0;
  for (int64_t b = 0; b < nb; ++b) {
    w8[b].d = w40[b].d = w41[b].d = kOne;
    w41[b].m = 0;
    for (int j = 0; j < 32; ++j) {
      int v = static_cast<int8_t>(bytes[nb * 36 + b * 32 + j]);
      if (v == -128) v = -127;
      if (b == 0) v = (j % 3) ? 127 : -127;
      w8[b].qs[j] = static_cast<int8_t>(v);
      want8 += v * x[b].qs[j];
    }
    for (int j = 0; j < 16; ++j) {
      const uint8_t q = (b == 0) ? 0xF0 : bytes[b * 16 + j + 7];  // block 0: 0 and 15
      w40[b].qs[j] = w41[b].qs[j] = q;
      want40 += ((q & 15) - 8) * x[b].qs[j] + ((q >> 4) - 8) * x[b].qs[j + 16];
      want41 += (q & 15) * x[b].qs[j] + (q >> 4) * x[b].qs[j + 16];
    }
  }
  // Q5_0/Q5_1: the same nibbles with a fifth bit from qh (block 0: every
  // high bit set, so its values are 16 and 31: the largest products).
  std::vector<BlockQ5_0> w50(nb);
  std::vector<BlockQ5_1> w51(nb);
  int64_t want50 = 0, want51 = 0;
  for (int64_t b = 0; b < nb; ++b) {
    w50[b].d = w51[b].d = kOne;
    w51[b].m = 0;
    for (int i = 0; i < 4; ++i) w50[b].qh[i] = w51[b].qh[i] = (b == 0) ? 0xFF : bytes[b * 4 + i + 3];
    for (int j = 0; j < 16; ++j) w50[b].qs[j] = w51[b].qs[j] = w40[b].qs[j];
    for (int j = 0; j < 32; ++j) {
      const int nibble = j < 16 ? (w50[b].qs[j] & 15) : (w50[b].qs[j - 16] >> 4);
      const int q = nibble | (((w50[b].qh[j / 8] >> (j % 8)) & 1) << 4);
      want50 += (q - 16) * x[b].qs[j];
      want51 += q * x[b].qs[j];
    }
  }
  float y = 0;
  simd.q5_0(w50.data(), 0, 1, x.data(), nb, 1, nb, &y, 1);
  EXPECT_EQ(y, static_cast<float>(want50));
  simd.q5_1(w51.data(), 0, 1, x.data(), nb, 1, nb, &y, 1);  // m = 0: the s term adds nothing
  EXPECT_EQ(y, static_cast<float>(want51));
  simd.q8_0(w8.data(), 0, 1, x.data(), nb, 1, nb, &y, 1);
  EXPECT_EQ(y, static_cast<float>(want8));
  simd.q4_0(w40.data(), 0, 1, x.data(), nb, 1, nb, &y, 1);
  EXPECT_EQ(y, static_cast<float>(want40));
  simd.q4_1(w41.data(), 0, 1, x.data(), nb, 1, nb, &y, 1);  // m = 0: the s term adds nothing
  EXPECT_EQ(y, static_cast<float>(want41));
}

TEST_P(KernelLevel, FloatDotsMatchScalar) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  const KernelTable& simd = *kernels_for(GetParam());
  const KernelTable& ref = scalar_kernel_table();
  for (int64_t n : {1, 7, 16, 31, 32, 33, 100, 576}) {
    const auto w = random_floats(n, static_cast<uint32_t>(n), 1.0f);
    const auto x = random_floats(n, static_cast<uint32_t>(n + 1000), 1.0f);
    std::vector<uint16_t> h(n), bf(n);
    double abs_sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      h[i] = f32_to_f16(w[i]);
      bf[i] = f32_to_bf16(w[i]);
      abs_sum += std::fabs(w[i] * x[i]) * 1.01;  // f16/bf16 rounding changes |w| by < 1%
    }
    const double tol = 1e-5 * abs_sum + 1e-7;
    EXPECT_NEAR(simd.f32(w.data(), x.data(), n), ref.f32(w.data(), x.data(), n), tol) << "f32 n=" << n;
    EXPECT_NEAR(simd.f16(h.data(), x.data(), n), ref.f16(h.data(), x.data(), n), tol) << "f16 n=" << n;
    EXPECT_NEAR(simd.bf16(bf.data(), x.data(), n), ref.bf16(bf.data(), x.data(), n), tol) << "bf16 n=" << n;
  }
}

// A Q4_0/Q4_1/Q8_0 row with f32 activations, straight from its blocks:
// exactly (bit for bit) dequantize_row_fast followed by the same level's f32
// dot, which is what makes activations = "f32" exact arithmetic on the stored
// weights whichever path a forward takes.
TEST_P(KernelLevel, BlockDotsWithFloatActivationsEqualDequantizeThenDot) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  const KernelTable& k = *kernels_for(GetParam());
  const std::pair<DType, FloatDotFn> dots[] = {
      {DType::q4_0, k.q4_0_f32}, {DType::q4_1, k.q4_1_f32}, {DType::q8_0, k.q8_0_f32}};
  constexpr int kRows = 8;
  for (const auto& [type, fused] : dots) {
    ASSERT_NE(fused, nullptr) << dtype_name(type);
    for (int64_t n : {32, 64, 576, 1536}) {
      const auto w = make_weights(type, kRows, n, static_cast<uint32_t>(n));
      const auto x = random_floats(static_cast<size_t>(n), static_cast<uint32_t>(n + 7), 3.0f);
      const size_t row_bytes = dtype_row_bytes(type, n);
      std::vector<float> row(static_cast<size_t>(n));
      for (int r = 0; r < kRows; ++r) {
        const uint8_t* wr = w.data() + r * row_bytes;
        ASSERT_TRUE(dequantize_row_fast(type, wr, row.data(), n));
        EXPECT_EQ(fused(wr, x.data(), n), k.f32(row.data(), x.data(), n))
            << dtype_name(type) << " n=" << n << " row " << r;
      }
    }
  }
}

// Every tile shape up to max_w x max_x of `tile` over rows w [max_w,
// w_stride] and x [max_x, x_stride] gives each pair dot(w row, x row) to the
// bit, and writes nothing outside its nw x nx block of y.
template <typename Element, typename Tile>
void expect_tiles_equal_dots(const char* name, Tile tile, FloatDotFn dot, const Element* w, size_t w_stride,
                             const float* x, size_t x_stride, int max_w, int max_x, int64_t n) {
  const size_t y_stride = static_cast<size_t>(max_w) + 3;
  for (int nw = 1; nw <= max_w; ++nw) {
    for (int nx = 1; nx <= max_x; ++nx) {
      std::vector<float> y(static_cast<size_t>(max_x) * y_stride, -7.0f);
      tile(w, w_stride, nw, x, x_stride, nx, n, y.data(), y_stride);
      for (int xi = 0; xi < max_x; ++xi) {
        for (size_t wi = 0; wi < y_stride; ++wi) {
          const float got = y[xi * y_stride + wi];
          if (xi < nx && static_cast<int>(wi) < nw) {
            EXPECT_EQ(got, dot(w + wi * w_stride, x + xi * x_stride, n))
                << name << " n=" << n << " tile " << nw << "x" << nx << " pair " << wi << "," << xi;
          } else {
            EXPECT_EQ(got, -7.0f) << name << " wrote outside the tile " << nw << "x" << nx;
          }
        }
      }
    }
  }
}

// Every tile shape of f32_tile gives each pair the bits of the level's f32
// dot, and writes nothing outside its nw x nx block of y.
TEST_P(KernelLevel, FloatTilesEqualTheFloatDotPerPair) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  const KernelTable& k = *kernels_for(GetParam());
  ASSERT_NE(k.f32_tile, nullptr);
  for (int64_t n : {32, 64, 576, 1536}) {
    const size_t w_stride = static_cast<size_t>(n) + 32, x_stride = static_cast<size_t>(n) + 64;  // padded rows
    const auto w = random_floats(kMaxFloatTileW * w_stride, static_cast<uint32_t>(n), 1.0f);
    const auto x = random_floats(kMaxFloatTileX * x_stride, static_cast<uint32_t>(n + 3), 2.0f);
    expect_tiles_equal_dots("f32", k.f32_tile, k.f32, w.data(), w_stride, x.data(), x_stride, kMaxFloatTileW,
                            kMaxFloatTileX, n);
  }
}

// Every tile shape of the f16 and bf16 tiles (where the level has them)
// gives each pair the bits of the level's f16 / bf16 dot, and writes nothing
// outside its nw x nx block of y.
TEST_P(KernelLevel, HalfTilesEqualTheHalfDotPerPair) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  const KernelTable& k = *kernels_for(GetParam());
  if (k.f16_tile == nullptr || k.bf16_tile == nullptr) {
    ASSERT_EQ(k.f16_tile, k.bf16_tile) << "a level has both half tiles or neither";
    GTEST_SKIP() << k.name << " has no f16/bf16 tiles: FloatLinear widens rows into scratch for f32_tile there";
  }
  for (int64_t n : {32, 64, 576, 1536}) {
    const size_t w_stride = static_cast<size_t>(n) + 32, x_stride = static_cast<size_t>(n) + 64;  // padded rows
    const auto values = random_floats(kMaxHalfTileW * w_stride, static_cast<uint32_t>(n), 1.0f);
    std::vector<uint16_t> h(values.size()), bf(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      h[i] = f32_to_f16(values[i]);
      bf[i] = f32_to_bf16(values[i]);
    }
    const auto x = random_floats(kMaxHalfTileX * x_stride, static_cast<uint32_t>(n + 3), 2.0f);
    expect_tiles_equal_dots("f16", k.f16_tile, k.f16, h.data(), w_stride, x.data(), x_stride, kMaxHalfTileW,
                            kMaxHalfTileX, n);
    expect_tiles_equal_dots("bf16", k.bf16_tile, k.bf16, bf.data(), w_stride, x.data(), x_stride, kMaxHalfTileW,
                            kMaxHalfTileX, n);
  }
}

// The repacked layouts, 8 and 16 rows: the scalar group kernel equals the
// plain scalar tile bit for bit (same per-block arithmetic, same order), which
// checks repacking; each SIMD group kernel matches the scalar one within the
// f32 tolerance. A level without kernels for the 16-row layout says so.
TEST_P(KernelLevel, RepackedGroupsMatchPlainRows) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  const KernelTable& simd = *kernels_for(GetParam());
  const KernelTable& ref = scalar_kernel_table();
  for (const int R : {kRepackRows, kWideRepackRows}) {
    const bool wide = R == kWideRepackRows;
    if (wide && simd.q4_1x16 == nullptr && simd.q8_0x16 == nullptr) {
      std::printf("[ info ] %s has no 16-row kernels: QuantLinear uses the 8-row layout there\n", simd.name);
      continue;
    }
    const int rows = 2 * R;  // two groups; the second is tested
    for (DType type : {DType::q4_0, DType::q4_1, DType::q8_0, DType::q5_0, DType::q5_1}) {
      const RepackTileFn simd_fn = repacked_group_kernel(simd, type, wide);
      const RepackTileFn ref_fn = repacked_group_kernel(ref, type, wide);
      ASSERT_NE(ref_fn, nullptr);
      if (simd_fn == nullptr) continue;
      for (int64_t nb : {1, 3, 18, 48}) {
        const int64_t cols = nb * 32;
        const auto w = make_weights(type, rows, cols, static_cast<uint32_t>(nb * 5 + 3));
        const auto x = make_activations(kMaxRepackX, cols, static_cast<uint32_t>(nb * 7 + 4));
        const size_t row_bytes = dtype_row_bytes(type, cols);
        std::vector<uint8_t> packed(w.size());
        repack_rows(type, wide, w.data(), rows, nb, packed.data());
        const uint8_t* group = packed.data() + R * row_bytes;
        const QuantTileFn plain = type == DType::q4_0   ? ref.q4_0
                                  : type == DType::q4_1 ? ref.q4_1
                                  : type == DType::q8_0 ? ref.q8_0
                                  : type == DType::q5_0 ? ref.q5_0
                                                        : ref.q5_1;
        std::vector<ActivationScales> xs(x.size());
        for (size_t b = 0; b < x.size(); ++b) {
          int32_t q_sum = 0;
          for (int8_t q : x[b].qs) q_sum += q;
          xs[b] = {f16_to_f32(x[b].d), f16_to_f32(x[b].s), -repacked_quant_excess(type, wide) * q_sum};
        }
        for (int nx = 1; nx <= kMaxRepackX; ++nx) {
          std::vector<float> want(kMaxRepackX * R), got(kMaxRepackX * R), plain_y(kMaxRepackX * R);
          for (int x0 = 0; x0 < nx; x0 += kMaxTileX) {
            for (int r0 = 0; r0 < R; r0 += 4)
              plain(w.data() + (R + r0) * row_bytes, row_bytes, 4, x.data() + x0 * nb, nb, std::min(kMaxTileX, nx - x0),
                    nb, &plain_y[x0 * R + r0], R);
          }
          ref_fn(group, nb, x.data(), xs.data(), nb, nx, want.data(), R, StreamAhead{});
          simd_fn(group, nb, x.data(), xs.data(), nb, nx, got.data(), R, StreamAhead{});
          // Prefetching (a block ahead; half the group ahead) gives the same bits.
          const auto end = reinterpret_cast<uintptr_t>(packed.data() + packed.size());
          for (const int64_t ahead : {int64_t{64}, static_cast<int64_t>(R * row_bytes / 2)}) {
            std::vector<float> fetched(kMaxRepackX * R);
            simd_fn(group, nb, x.data(), xs.data(), nb, nx, fetched.data(), R, StreamAhead{ahead, end});
            EXPECT_EQ(fetched, got) << dtype_name(type) << " R=" << R << " nb=" << nb << " ahead " << ahead;
          }
          for (int xi = 0; xi < nx; ++xi) {
            for (int r = 0; r < R; ++r) {
              const int i = xi * R + r;
              EXPECT_EQ(want[i], plain_y[i]) << dtype_name(type) << " R=" << R << " nb=" << nb << " (" << xi << "," << r << ")";
              const double tol = 1e-5 * abs_dot(type, w.data() + (R + r) * row_bytes, x.data() + xi * nb, cols) + 1e-6;
              EXPECT_NEAR(got[i], want[i], tol)
                  << dtype_name(type) << " R=" << R << " nb=" << nb << " nx=" << nx << " (" << xi << "," << r << ")";
            }
          }
        }
      }
    }
  }
}

// n rows of nb Q8_1 blocks and their scales as the block panels read them,
// the tiles `rows` rows apart (at least n).
struct TileInput {
  HostBuffer memory;
  BlockTiles tiles;
};
TileInput tile_input(const std::vector<BlockQ8_1>& x, const std::vector<ActivationScales>& xs, int n, int64_t nb,
                     size_t rows) {
  TileInput in{HostBuffer(block_tile_bytes(nb, rows)), {}};
  in.tiles = block_tiles(in.memory.data(), nb, rows);
  for (int i = 0; i < n; ++i) block_tile_quants(x.data() + i * nb, xs.data() + i * nb, nb, i, in.tiles);
  return in;
}

std::vector<ActivationScales> activation_scales(const std::vector<BlockQ8_1>& x, DType type) {
  std::vector<ActivationScales> xs(x.size());
  for (size_t b = 0; b < x.size(); ++b) {
    int32_t q_sum = 0;
    for (int8_t q : x[b].qs) q_sum += q;
    xs[b] = {f16_to_f32(x[b].d), f16_to_f32(x[b].s), -repacked_quant_excess(type, true) * q_sum};
  }
  return xs;
}

// The block panels (amx, repack16_panels_amx.cpp) against the level's own
// 16-row group kernels, bit for bit (the same integer sums, the same f32
// steps in the same order): 1 to 3 tiles of activation rows, odd block
// counts (the Q8_0 and Q4_0 layouts' lone last block), a group that is not
// the first, tiles further apart than the rows. Levels without panels say so.
TEST_P(KernelLevel, Repack16PanelsMatchTheGroups) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  const KernelTable& k = *kernels_for(GetParam());
  for (DType type : {DType::q4_0, DType::q4_1, DType::q8_0, DType::q5_0, DType::q5_1}) {
    const RepackPanelFn panel = repacked_panel_kernel(k, type);
    if (panel == nullptr) {
      ASSERT_NE(GetParam(), IsaLevel::amx) << "the amx table lacks the " << dtype_name(type) << " panel";
      GTEST_SKIP() << k.name << " has no block panels (the amx level's only)";
    }
    const RepackTileFn group = repacked_group_kernel(k, type, true);
    ASSERT_NE(group, nullptr);
    for (int64_t nb : {1, 2, 3, 18}) {
      const int64_t cols = nb * kBlock;
      constexpr int kRows = 3 * kWideRepackRows;
      const auto w = make_weights(type, kRows, cols, static_cast<uint32_t>(nb * 13 + 5));
      std::vector<uint8_t> packed(w.size());
      repack_rows(type, true, w.data(), kRows, nb, packed.data());
      const uint8_t* second = packed.data() + kWideRepackRows * dtype_row_bytes(type, cols);
      for (int nx : {16, 32, 48}) {
        const auto x = make_activations(nx, cols, static_cast<uint32_t>(nb * 11 + nx));
        const auto xs = activation_scales(x, type);
        std::vector<float> want(static_cast<size_t>(nx) * kWideRepackRows, NAN), got(want.size(), NAN);
        for (int x0 = 0; x0 < nx; x0 += kMaxRepackX)
          group(second, nb, x.data() + x0 * nb, xs.data() + x0 * nb, nb, std::min(kMaxRepackX, nx - x0),
                want.data() + x0 * kWideRepackRows, kWideRepackRows, StreamAhead{});
        const TileInput in = tile_input(x, xs, nx, nb, static_cast<size_t>(nx) + kPanelTileX);
        panel(second, nb, in.tiles, nx, got.data(), kWideRepackRows);
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_EQ(got[i], want[i]) << k.name << " " << dtype_name(type) << " nb=" << nb << " nx=" << nx << " ("
                                     << i / kWideRepackRows << "," << i % kWideRepackRows << ")";
      }
    }
  }
}

// Where a kernel prefetches for a block: `bytes` past it, nowhere when off or
// when that lies at or past the end of the thread's rows.
TEST(StreamAhead, TargetsTheLinesAheadWithinTheThreadsRows) {
  alignas(64) static uint8_t rows[4096];
  const auto base = reinterpret_cast<uintptr_t>(rows);
  const StreamAhead off{0, base + sizeof(rows)};
  EXPECT_EQ(off.target(rows), 0u);
  const StreamAhead ahead{1024, base + sizeof(rows)};
  EXPECT_EQ(ahead.target(rows), base + 1024);
  EXPECT_EQ(ahead.target(rows + 3071), base + 4095);
  EXPECT_EQ(ahead.target(rows + 3072), 0u);  // the end itself
  EXPECT_EQ(ahead.target(rows + 4000), 0u);
  const StreamAhead short_rows{1024, base + 512};  // a thread's rows end before the distance
  EXPECT_EQ(short_rows.target(rows), 0u);
}

// Every quant at its largest value against activations of 127 with unit
// scales: the result is an integer (32 * 127 * q per block) exact in f32, so
// any 16-bit partial sum that saturates shows, and so does a wrong q_offset
// (Q8_0 in 16 rows: 128 * 32 * 127 per block). Random data rarely gets there.
TEST_P(KernelLevel, RepackedGroupsSumExactlyAtTheExtremes) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  const KernelTable& k = *kernels_for(GetParam());
  constexpr uint16_t kOne = 0x3C00;
  constexpr int64_t nb = 5;
  std::vector<BlockQ8_1> x(nb);
  std::vector<ActivationScales> xs(nb);
  for (int64_t b = 0; b < nb; ++b) {
    x[b].d = kOne;
    for (auto& q : x[b].qs) q = 127;
    x[b].s = f32_to_f16(32 * 127.0f);  // exact in f16; only meets m = 0 below
  }
  for (const int R : {kRepackRows, kWideRepackRows}) {
    for (DType type : {DType::q4_0, DType::q4_1, DType::q5_0, DType::q5_1, DType::q8_0}) {
      for (int64_t b = 0; b < nb; ++b)
        xs[b] = {1.0f, 32 * 127.0f, -repacked_quant_excess(type, R == kWideRepackRows) * 32 * 127};
      const RepackTileFn fn = repacked_group_kernel(k, type, R == kWideRepackRows);
      if (fn == nullptr) continue;  // no kernel for this layout at this level
      const size_t block_bytes = dtype_info(type).block_bytes;
      std::vector<uint8_t> rows(R * nb * block_bytes, 0xFF), packed(rows.size());
      for (int64_t i = 0; i < R * nb; ++i) {  // d = 1 (and m = 0): every quant 15, 31 or 127
        uint8_t* blk = rows.data() + i * block_bytes;
        std::memcpy(blk, &kOne, 2);
        if (type == DType::q4_1 || type == DType::q5_1) std::memset(blk + 2, 0, 2);
        if (type == DType::q8_0) std::memset(blk + 2, 127, kBlock);
      }
      repack_rows(type, R == kWideRepackRows, rows.data(), R, nb, packed.data());
      const int q = type == DType::q4_0   ? 15 - 8
                    : type == DType::q4_1 ? 15
                    : type == DType::q5_0 ? 31 - 16
                    : type == DType::q5_1 ? 31
                                          : 127;
      std::vector<float> y(R);
      fn(packed.data(), nb, x.data(), xs.data(), nb, 1, y.data(), R, StreamAhead{});
      for (int r = 0; r < R; ++r)
        EXPECT_EQ(y[r], static_cast<float>(nb * 32 * 127 * q)) << dtype_name(type) << " R=" << R << " row " << r;
      const RepackPanelFn panel = R == kWideRepackRows ? repacked_panel_kernel(k, type) : nullptr;
      if (panel == nullptr) continue;
      // A tile of 16 such activation rows through the panel (amx).
      std::vector<BlockQ8_1> x16;
      std::vector<ActivationScales> xs16;
      for (int i = 0; i < kPanelTileX; ++i) {
        x16.insert(x16.end(), x.begin(), x.end());
        xs16.insert(xs16.end(), xs.begin(), xs.end());
      }
      const TileInput in = tile_input(x16, xs16, kPanelTileX, nb, kPanelTileX);
      std::vector<float> tile_y(kPanelTileX * R);
      panel(packed.data(), nb, in.tiles, kPanelTileX, tile_y.data(), R);
      for (size_t i = 0; i < tile_y.size(); ++i)
        EXPECT_EQ(tile_y[i], static_cast<float>(nb * 32 * 127 * q)) << dtype_name(type) << " panel at " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, KernelLevel, ::testing::ValuesIn(testing::all_levels()),
                         testing::level_param_name);

TEST(Dispatch, BestLevelIsSupportedAndForcingWorks) {
  const IsaLevel best = best_isa_level();
  EXPECT_TRUE(cpu_supports(best));
  EXPECT_TRUE(cpu_supports(IsaLevel::scalar));
  ASSERT_TRUE(force_isa_level(IsaLevel::scalar));
  EXPECT_EQ(active_kernels().level, IsaLevel::scalar);
  ASSERT_TRUE(force_isa_level(best));
  EXPECT_EQ(active_kernels().level, best);
  std::printf("[ info ] best instruction-set level on this CPU: %s\n", isa_level_name(best).data());
}

}  // namespace
}  // namespace tessera::ggml
