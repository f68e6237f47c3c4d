// The Linear drivers (decode n = 1, prefill n = 5 and 17) against a plain f32
// product of the dequantized weights with the unquantized activations.
//
// Tolerance for the quantized formats: activations are quantized per block of
// 32 to x' = d16 * q with |x - x'| <= d/2 + 127 * d * 2^-11 <= 0.6 * d, so
// |y - y_ref| <= sum_i |w_i| * 0.6 * d(block of i), plus the f16 rounding of
// s in Q4_1's m * s term (|m * s| * 2^-11 per block), plus f32 summation
// (1e-5 * sum |w_i x_i|). The bound is computed per output from the data.
// Float formats: 1e-5 * sum |w_i x_i| (summation order only).
#include <gtest/gtest.h>
#include <omp.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "activation_terms.hpp"
#include "float_linear.hpp"
#include "kquant_linear.hpp"
#include "prefetch_choice.hpp"
#include "formats.hpp"
#include "quant_linear.hpp"
#include "reference.hpp"
#include "row_split.hpp"
#include "ggml_testing.hpp"

namespace tessera::ggml {
namespace {

using testing::random_bytes;
using testing::random_floats;


// Weight bytes for [rows, cols] of `type`. Q4_0/Q4_1/Q8_0 come from the
// reference quantizer; K-quants are random bytes with sane super-block scales;
// floats are converted from random values.
std::vector<uint8_t> make_weight_bytes(DType type, int64_t rows, int64_t cols, uint32_t seed) {
  const size_t row_bytes = dtype_row_bytes(type, cols);
  std::vector<uint8_t> w(rows * row_bytes);
  const auto f = random_floats(rows * cols, seed, 0.5f);
  auto bytes = random_bytes(w.size(), seed + 1);
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* dst = w.data() + r * row_bytes;
    const float* src = f.data() + r * cols;
    switch (type) {
      case DType::q4_0: quantize_row_q4_0(src, reinterpret_cast<BlockQ4_0*>(dst), cols); break;
      case DType::q4_1: quantize_row_q4_1(src, reinterpret_cast<BlockQ4_1*>(dst), cols); break;
      case DType::q8_0: quantize_row_q8_0(src, reinterpret_cast<BlockQ8_0*>(dst), cols); break;
      case DType::q5_0: quantize_row_q5_0(src, reinterpret_cast<BlockQ5_0*>(dst), cols); break;
      case DType::q5_1: quantize_row_q5_1(src, reinterpret_cast<BlockQ5_1*>(dst), cols); break;
      case DType::f32: std::memcpy(dst, src, row_bytes); break;
      case DType::f16:
        for (int64_t i = 0; i < cols; ++i) reinterpret_cast<uint16_t*>(dst)[i] = f32_to_f16(src[i]);
        break;
      case DType::bf16:
        for (int64_t i = 0; i < cols; ++i) reinterpret_cast<uint16_t*>(dst)[i] = f32_to_bf16(src[i]);
        break;
      case DType::q2_k:
      case DType::q3_k:
      case DType::q4_k:
      case DType::q5_k:
      case DType::q6_k: {
        std::memcpy(dst, bytes.data() + r * row_bytes, row_bytes);
        testing::set_every_kquant_scale(type, dst, row_bytes, 0.01f, 0.005f);
        break;
      }
      default: ADD_FAILURE() << "no generator for " << dtype_name(type);
    }
  }
  return w;
}

std::unique_ptr<Linear> make(DType type, const std::vector<uint8_t>& w, int64_t out, int64_t in,
                             std::vector<float> bias) {
  if (is_quantized_domain(type)) return std::make_unique<QuantLinear>(w.data(), type, out, in, std::move(bias));
  return std::make_unique<FloatLinear>(w.data(), type, out, in, std::move(bias));
}

// The quantized-domain driver the plugin makes for `type` (KQuantLinear for
// the K-quants, QuantLinear otherwise), with `terms` activation terms.
std::unique_ptr<Linear> make_quantized(DType type, const std::vector<uint8_t>& w, int64_t out, int64_t in,
                                       std::vector<float> bias, ActivationTerms terms, bool repack = true) {
  if (is_kquant(type))
    return std::make_unique<KQuantLinear>(w.data(), type, out, in, std::move(bias), repack, nullptr, terms);
  return std::make_unique<QuantLinear>(w.data(), type, out, in, std::move(bias), repack, nullptr, terms);
}

struct Case {
  DType type;
  int64_t in;
};

class LinearLevel : public ::testing::TestWithParam<IsaLevel> {};

TEST_P(LinearLevel, ForwardMatchesF32Reference) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  testing::ScopedLevel level(GetParam());
  ASSERT_TRUE(level.ok());
  const Case cases[] = {{DType::q4_0, 96},  {DType::q4_1, 576}, {DType::q8_0, 160}, {DType::f32, 72},
                        {DType::f16, 200},  {DType::bf16, 64},  {DType::q4_k, 512}, {DType::q5_k, 256},
                        {DType::q6_k, 256}, {DType::q5_0, 576}, {DType::q5_1, 160}, {DType::f16, 256},
                        {DType::f32, 96},   {DType::q2_k, 256}, {DType::q3_k, 512}};  // f32 72, f16 200: the dot for every row; f32 96, f16 256, bf16 64: tiles
  constexpr int64_t kOut = 67;  // not a multiple of the tile height; with in = 576 Q4_1 it goes parallel
  for (const Case& c : cases) {
    const auto w = make_weight_bytes(c.type, kOut, c.in, static_cast<uint32_t>(c.in));
    std::vector<float> wf(kOut * c.in);
    for (int64_t r = 0; r < kOut; ++r)
      ASSERT_TRUE(dequantize_row(c.type, w.data() + r * dtype_row_bytes(c.type, c.in), wf.data() + r * c.in, c.in));
    const auto bias = random_floats(kOut, 7);
    auto linear = make(c.type, w, kOut, c.in, bias);
    ASSERT_EQ(linear->weight_bytes(), kOut * dtype_row_bytes(c.type, c.in));
    for (int64_t n : {1, 5, 17}) {
      const auto x = random_floats(n * c.in, static_cast<uint32_t>(n * 31 + c.in), 1.5f);
      std::vector<float> y(n * kOut, NAN);
      ASSERT_TRUE(linear->forward(x.data(), y.data(), n).ok());
      for (int64_t i = 0; i < n; ++i) {
        const float* xr = x.data() + i * c.in;
        // Per-block activation step d = max|x| / 127 over the block (float
        // formats may have a partial last block: they never quantize, but the
        // bound is computed for every case).
        std::vector<float> step((c.in + 31) / 32);
        for (int64_t b = 0; b < static_cast<int64_t>(step.size()); ++b) {
          float amax = 0;
          for (int64_t j = b * 32; j < std::min<int64_t>(c.in, b * 32 + 32); ++j) amax = std::max(amax, std::fabs(xr[j]));
          step[b] = amax / 127.0f;
        }
        for (int64_t r = 0; r < kOut; ++r) {
          const float* wr = wf.data() + r * c.in;
          double ref = bias[r], abs_sum = 0, quant_bound = 0;
          for (int64_t k = 0; k < c.in; ++k) {
            ref += static_cast<double>(wr[k]) * xr[k];
            abs_sum += std::fabs(static_cast<double>(wr[k]) * xr[k]);
            quant_bound += std::fabs(wr[k]) * 0.6 * step[k / 32];
          }
          double tol = 1e-5 * abs_sum + 1e-5;
          if (is_quantized_domain(c.type)) {
            tol += quant_bound;
            // Q4_1/Q5_1: m * s carries the f16 rounding of s = d * sum(q).
            if (c.type == DType::q4_1 || c.type == DType::q5_1) {
              const uint8_t* row = w.data() + r * dtype_row_bytes(c.type, c.in);
              const size_t block_bytes = dtype_info(c.type).block_bytes;
              for (int64_t b = 0; b < c.in / 32; ++b) {
                uint16_t m;  // the f16 right after d in both layouts
                std::memcpy(&m, row + b * block_bytes + 2, sizeof m);
                double xs = 0;
                for (int j = 0; j < 32; ++j) xs += std::fabs(xr[b * 32 + j]);
                tol += std::fabs(f16_to_f32(m)) * xs * (2.0 / 2048.0);
              }
            }
          }
          ASSERT_NEAR(y[i * kOut + r], ref, tol)
              << dtype_name(c.type) << " in=" << c.in << " n=" << n << " row " << i << " out " << r;
        }
      }
    }
  }
}

// The f32 path on Q4_0/Q4_1/Q8_0 (the plugin's activations = "f32"): weight
// rows dequantized, activations kept in f32, so only the summation order
// separates it from the reference (1e-5 * sum |w_i x_i|).
TEST_P(LinearLevel, FloatPathOnBlockFormatsIsTheExactProduct) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  testing::ScopedLevel level(GetParam());
  ASSERT_TRUE(level.ok());
  constexpr int64_t kOut = 67;
  for (const Case& c : {Case{DType::q4_0, 96}, Case{DType::q4_1, 576}, Case{DType::q8_0, 160}, Case{DType::q5_0, 96},
                        Case{DType::q5_1, 64}}) {
    const auto w = make_weight_bytes(c.type, kOut, c.in, static_cast<uint32_t>(c.in));
    std::vector<float> wf(kOut * c.in);
    for (int64_t r = 0; r < kOut; ++r)
      ASSERT_TRUE(dequantize_row(c.type, w.data() + r * dtype_row_bytes(c.type, c.in), wf.data() + r * c.in, c.in));
    FloatLinear linear(w.data(), c.type, kOut, c.in, {});
    for (int64_t n : {1, 17, 40}) {  // 40: two activation chunks, each dequantizing the rows again
      const auto x = random_floats(n * c.in, static_cast<uint32_t>(n * 13 + c.in), 1.5f);
      std::vector<float> y(n * kOut, NAN);
      ASSERT_TRUE(linear.forward(x.data(), y.data(), n).ok());
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t r = 0; r < kOut; ++r) {
          double ref = 0, abs_sum = 0;
          for (int64_t k = 0; k < c.in; ++k) {
            const double p = static_cast<double>(wf[r * c.in + k]) * x[i * c.in + k];
            ref += p;
            abs_sum += std::fabs(p);
          }
          ASSERT_NEAR(y[i * kOut + r], ref, 1e-5 * abs_sum + 1e-6)
              << dtype_name(c.type) << " n=" << n << " row " << i << " out " << r;
        }
      }
    }
  }
}

// FloatLinear gives each activation row of a batch the bits it gets alone, at
// every level: one row is dotted straight from the weights (plain floats,
// Q4_0/Q4_1/Q8_0), several go through f32 tiles of widened rows. Exact
// speculative verification rests on it. Widths that are not a multiple of 32
// (f16 200) keep the dot for every row.
TEST_P(LinearLevel, FloatPathGivesEachRowOfABatchItsBitsAlone) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  testing::ScopedLevel level(GetParam());
  ASSERT_TRUE(level.ok());
  constexpr int64_t kOut = 67;
  // f32 48, bf16 80, f16 200: not a multiple of 32, where AVX-512's dot would
  // sum its tail apart from the tile's order.
  for (const Case& c : {Case{DType::f32, 96}, Case{DType::f16, 1536}, Case{DType::bf16, 64}, Case{DType::f32, 48},
                        Case{DType::bf16, 80}, Case{DType::f16, 200}, Case{DType::q4_0, 96}, Case{DType::q4_1, 576},
                        Case{DType::q8_0, 160}, Case{DType::q4_k, 512}, Case{DType::q3_k, 256}}) {
    const auto w = make_weight_bytes(c.type, kOut, c.in, static_cast<uint32_t>(c.in + 3));
    FloatLinear linear(w.data(), c.type, kOut, c.in, {});
    for (int64_t n : {2, 3, 5, 40}) {  // f16/bf16: 2 and 3 by dots, 5 and 40 tiled; 40: two activation chunks
      const auto x = random_floats(n * c.in, static_cast<uint32_t>(n * 7 + c.in), 1.5f);
      std::vector<float> batch(n * kOut, NAN), alone(kOut, NAN);
      ASSERT_TRUE(linear.forward(x.data(), batch.data(), n).ok());
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_TRUE(linear.forward(x.data() + i * c.in, alone.data(), 1).ok());
        for (int64_t r = 0; r < kOut; ++r)
          ASSERT_EQ(std::bit_cast<uint32_t>(batch[i * kOut + r]), std::bit_cast<uint32_t>(alone[r]))
              << dtype_name(c.type) << " in " << c.in << " n=" << n << " row " << i << " out " << r;
      }
    }
  }
}

// activations = "q8x2" (activation_terms.hpp) against the f64 product, per
// format and level, repacked and in place, one row and several. Error bound:
// the first term leaves |r| <= d1/2 + 127 d1 2^-11 <= 0.57 d1 (d1 = max|x| /
// 127 per block, 32 or 256 wide), the second is off by at most 0.6 d2 with
// d2 = max|r| / 127, so each element by 0.35 max|x| / 127^2. The minimum of
// Q4_1/Q5_1 takes the block sum within 2^-22. And the error must be at least
// 30 times below one term's (q8), so a second term that did nothing, or
// counted the minimum twice, fails.
TEST_P(LinearLevel, TwoActivationTermsFollowTheExactProduct) {
  TESSERA_SKIP_IF_UNSUPPORTED(GetParam());
  testing::ScopedLevel level(GetParam());
  ASSERT_TRUE(level.ok());
  const Case cases[] = {{DType::q4_0, 96},  {DType::q4_1, 576}, {DType::q8_0, 160}, {DType::q5_0, 576},
                        {DType::q5_1, 160}, {DType::q4_k, 512}, {DType::q5_k, 256}, {DType::q6_k, 256},
                        {DType::q2_k, 512}, {DType::q3_k, 256}};
  constexpr int64_t kOut = 67;  // groups of 8 and 16, and rows past them
  for (const Case& c : cases) {
    const bool kquant = is_kquant(c.type);
    const int64_t block = kquant ? kSuperBlock : kBlock;
    const auto w = make_weight_bytes(c.type, kOut, c.in, static_cast<uint32_t>(c.in + 3));
    std::vector<float> wf(kOut * c.in);
    for (int64_t r = 0; r < kOut; ++r)
      ASSERT_TRUE(dequantize_row(c.type, w.data() + r * dtype_row_bytes(c.type, c.in), wf.data() + r * c.in, c.in));
    for (bool repack : {true, false}) {
      if (kquant && !repack) continue;
      auto two = make_quantized(c.type, w, kOut, c.in, {}, ActivationTerms::q8x2, repack);
      auto one = make_quantized(c.type, w, kOut, c.in, {}, ActivationTerms::q8, repack);
      for (int64_t n : {1, 5, 17}) {
        const auto x = random_floats(n * c.in, static_cast<uint32_t>(n * 37 + c.in), 1.5f);
        std::vector<float> y2(n * kOut, NAN), y1(n * kOut, NAN);
        ASSERT_TRUE(two->forward(x.data(), y2.data(), n).ok());
        ASSERT_TRUE(one->forward(x.data(), y1.data(), n).ok());
        double error_two = 0, error_one = 0;
        for (int64_t i = 0; i < n; ++i) {
          const float* xr = x.data() + i * c.in;
          for (int64_t r = 0; r < kOut; ++r) {
            const float* wr = wf.data() + r * c.in;
            double ref = 0, abs_sum = 0, bound = 0;
            for (int64_t b = 0; b < c.in / block; ++b) {
              float amax = 0, abs_x = 0;
              for (int64_t j = b * block; j < (b + 1) * block; ++j) {
                amax = std::max(amax, std::fabs(xr[j]));
                abs_x += std::fabs(xr[j]);
              }
              for (int64_t j = b * block; j < (b + 1) * block; ++j) {
                ref += static_cast<double>(wr[j]) * xr[j];
                abs_sum += std::fabs(static_cast<double>(wr[j]) * xr[j]);
                bound += std::fabs(wr[j]) * 0.35 * amax / (127.0 * 127.0);
              }
              if (c.type == DType::q4_1 || c.type == DType::q5_1) {
                uint16_t m;  // the f16 right after d in both layouts
                std::memcpy(&m, w.data() + r * dtype_row_bytes(c.type, c.in) + b * dtype_info(c.type).block_bytes + 2,
                            sizeof m);
                bound += std::fabs(f16_to_f32(m)) * abs_x * 0x1p-21;
              }
            }
            ASSERT_NEAR(y2[i * kOut + r], ref, bound + 2e-6 * abs_sum + 1e-6)
                << dtype_name(c.type) << (repack ? " repacked" : " in place") << " n=" << n << " row " << i << " out " << r;
            error_two += std::fabs(y2[i * kOut + r] - ref);
            error_one += std::fabs(y1[i * kOut + r] - ref);
          }
        }
        EXPECT_LT(error_two * 30, error_one) << dtype_name(c.type) << " n=" << n << ": the second term gains too little";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, LinearLevel, ::testing::ValuesIn(testing::all_levels()),
                         testing::level_param_name);

// Each output is computed by one thread with the same tiles whatever the
// thread count, so results are bit-identical.
TEST(Linear, ThreadCountDoesNotChangeResults) {
  constexpr int64_t kOut = 203, kIn = 1536;
  const auto w = make_weight_bytes(DType::q4_1, kOut, kIn, 5);
  QuantLinear linear(w.data(), DType::q4_1, kOut, kIn, {});
  for (int64_t n : {1, 9}) {
    const auto x = random_floats(n * kIn, 11);
    std::vector<float> y1(n * kOut), y2(n * kOut);
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    ASSERT_TRUE(linear.forward(x.data(), y1.data(), n).ok());
    omp_set_num_threads(2);
    ASSERT_TRUE(linear.forward(x.data(), y2.data(), n).ok());
    omp_set_num_threads(saved);
    for (int64_t i = 0; i < n * kOut; ++i) ASSERT_EQ(y1[i], y2[i]) << "n=" << n << " at " << i;
  }
}

// Prefetching the weights ahead of the kernels changes no bit of any format's
// output, on one and two threads (each thread's stream ends where its rows
// do), for decode and for a verification's few rows.
TEST(Linear, PrefetchChangesNoResult) {
  constexpr int64_t kOut = 203, kIn = 1536;  // 100+ KiB of Q4_0 a thread: the prefetch reaches 16 KiB ahead
  PrefetchChoice& choice = prefetch_choice();
  const PrefetchMode saved_mode = choice.mode();
  const int saved_threads = omp_get_max_threads();
  for (DType type : {DType::q4_0, DType::q4_1, DType::q8_0, DType::q5_0, DType::q5_1}) {
    const auto w = make_weight_bytes(type, kOut, kIn, 7);
    QuantLinear linear(w.data(), type, kOut, kIn, {});
    for (int threads : {1, 2}) {
      omp_set_num_threads(threads);
      for (int64_t n : {1, 4}) {
        const auto x = random_floats(n * kIn, 17);
        std::vector<float> plain(n * kOut), ahead(n * kOut);
        choice.set_mode(PrefetchMode::off);
        EXPECT_TRUE(linear.forward(x.data(), plain.data(), n).ok());
        choice.set_mode(PrefetchMode::on);
        EXPECT_NE(choice.ahead_bytes(), 0);
        EXPECT_TRUE(linear.forward(x.data(), ahead.data(), n).ok());
        EXPECT_EQ(ahead, plain) << dtype_name(type) << " threads " << threads << " n " << n;
      }
    }
  }
  omp_set_num_threads(saved_threads);
  choice.set_mode(saved_mode);
}

// Repacked and in-place layouts give the same outputs (up to f32 summation
// order), including the rows past the last whole group of 8.
TEST(Linear, RepackedMatchesInPlace) {
  constexpr int64_t kOut = 45, kIn = 576;
  for (DType type : {DType::q4_0, DType::q4_1, DType::q8_0, DType::q5_0, DType::q5_1}) {
    const auto w = make_weight_bytes(type, kOut, kIn, 21);
    QuantLinear packed(w.data(), type, kOut, kIn, {}, /*repack=*/true);
    QuantLinear plain(w.data(), type, kOut, kIn, {}, /*repack=*/false);
    for (int64_t n : {1, 6}) {
      const auto x = random_floats(n * kIn, 13);
      std::vector<float> y1(n * kOut), y2(n * kOut);
      ASSERT_TRUE(packed.forward(x.data(), y1.data(), n).ok());
      ASSERT_TRUE(plain.forward(x.data(), y2.data(), n).ok());
      for (int64_t i = 0; i < n * kOut; ++i) ASSERT_NEAR(y1[i], y2[i], 1e-4f * (1.0f + std::fabs(y2[i]))) << i;
    }
  }
}

// Q4_0's own repacked layouts give the bits of Q5_0 weights holding the
// same values (q5 = q + 8): the integer sums are the same integers
// (Σ q·x − 8·Σx = Σ q5·x − 16·Σx) and the block arithmetic is the same, at
// every row count, with either activation form.
TEST(Linear, Q4_0GivesTheBitsOfTheQ5_0OfItsValues) {
  constexpr int64_t kOut = 37, kIn = 576;
  const auto w4 = make_weight_bytes(DType::q4_0, kOut, kIn, 71);
  // The same values as Q5_0 blocks, written by the format's definition: q5 = q + 8.
  std::vector<uint8_t> w5(static_cast<size_t>(kOut * dtype_row_bytes(DType::q5_0, kIn)));
  const auto* in = reinterpret_cast<const BlockQ4_0*>(w4.data());
  auto* out = reinterpret_cast<BlockQ5_0*>(w5.data());
  for (int64_t b = 0; b < kOut * kIn / kBlock; ++b) {
    out[b].d = in[b].d;
    uint32_t qh = 0;
    for (int j = 0; j < kBlock; ++j) {
      const int q = j < 16 ? in[b].qs[j] & 15 : in[b].qs[j - 16] >> 4;
      const int q5 = q + 8;
      if (q5 & 16) qh |= 1u << j;
      if (j < 16) out[b].qs[j] = static_cast<uint8_t>((out[b].qs[j] & 0xf0) | (q5 & 15));
      else out[b].qs[j - 16] = static_cast<uint8_t>((out[b].qs[j - 16] & 0x0f) | ((q5 & 15) << 4));
    }
    std::memcpy(out[b].qh, &qh, 4);
  }
  std::vector<float> v4(kIn), v5(kIn);
  for (int64_t r = 0; r < kOut; ++r) {
    ASSERT_TRUE(dequantize_row(DType::q4_0, w4.data() + r * dtype_row_bytes(DType::q4_0, kIn), v4.data(), kIn));
    ASSERT_TRUE(dequantize_row(DType::q5_0, w5.data() + r * dtype_row_bytes(DType::q5_0, kIn), v5.data(), kIn));
    ASSERT_EQ(v4, v5) << "row " << r;
  }
  for (ActivationTerms terms : {ActivationTerms::q8, ActivationTerms::q8x2}) {
    QuantLinear q4(w4.data(), DType::q4_0, kOut, kIn, {}, /*repack=*/true, nullptr, terms);
    QuantLinear q5(w5.data(), DType::q5_0, kOut, kIn, {}, /*repack=*/true, nullptr, terms);
    EXPECT_EQ(q4.column_alignment(), q5.column_alignment());
    for (int64_t n : {1, 3, 9}) {
      const auto x = random_floats(n * kIn, static_cast<uint32_t>(72 + n));
      std::vector<float> y4(n * kOut), y5(n * kOut);
      ASSERT_TRUE(q4.forward(x.data(), y4.data(), n).ok());
      ASSERT_TRUE(q5.forward(x.data(), y5.data(), n).ok());
      for (int64_t i = 0; i < n * kOut; ++i) ASSERT_EQ(y4[i], y5[i]) << "n=" << n << " at " << i;
    }
  }
}

// A linear repacked to the 16-row layout and then run at a level without
// 16-row kernels (AVX2, forced) computes from the ggml rows: same results up to
// f32 summation order. Skipped, with the reason, where the layout is not used.
TEST(Linear, WideLayoutFallsBackWhereTheLevelLacksItsKernels) {
  constexpr int64_t kOut = 70, kIn = 576;
  const IsaLevel best = best_isa_level();
  ASSERT_TRUE(force_isa_level(best));  // the layout follows the level in use at construction
  for (DType type : {DType::q4_0, DType::q4_1, DType::q8_0, DType::q5_0, DType::q5_1}) {
    const auto w = make_weight_bytes(type, kOut, kIn, 41);
    QuantLinear linear(w.data(), type, kOut, kIn, {});
    if (linear.column_alignment() != kWideRepackRows || !cpu_supports(IsaLevel::avx2)) {
      GTEST_SKIP() << "the 16-row layout is not used at " << isa_level_name(best) << " on this CPU";
    }
    for (int64_t n : {1, 5}) {
      const auto x = random_floats(n * kIn, 43);
      std::vector<float> wide(n * kOut), fallback(n * kOut);
      ASSERT_TRUE(linear.forward(x.data(), wide.data(), n).ok());
      ASSERT_TRUE(force_isa_level(IsaLevel::avx2));
      const Status st = linear.forward(x.data(), fallback.data(), n);
      ASSERT_TRUE(force_isa_level(best));
      ASSERT_TRUE(st.ok());
      for (int64_t i = 0; i < n * kOut; ++i)
        ASSERT_NEAR(wide[i], fallback[i], 1e-4f * (1.0f + std::fabs(wide[i]))) << dtype_name(type) << " at " << i;
    }
  }
}

// prepare() then compute() over ranges on multiples of the alignment, in any
// order, gives exactly forward()'s outputs (same tiles, same order per output),
// with a bias, for each quantized format, repacked or not, one row or several.
TEST(Linear, PrepareComputeSplitEqualsForward) {
  constexpr int64_t kOut = 53, kIn = 576;  // 6 whole groups of 8 (3 of 16) and 5 rows past them
  for (DType type : {DType::q4_0, DType::q4_1, DType::q8_0, DType::q5_0, DType::q5_1}) {
    for (bool repack : {true, false}) {
      const auto w = make_weight_bytes(type, kOut, kIn, 31);
      const auto bias = random_floats(kOut, 32);
      QuantLinear linear(w.data(), type, kOut, kIn, bias, repack);
      ASSERT_TRUE(linear.splits());
      const int64_t a = linear.column_alignment();
      ASSERT_TRUE(a == kRepackRows || (a == kWideRepackRows && repack)) << a;
      for (int64_t n : {1, 3, 8, 11}) {
        const auto x = random_floats(n * kIn, 33 + n);
        std::vector<float> want(n * kOut), got(n * kOut, -99.0f);
        ASSERT_TRUE(linear.forward(x.data(), want.data(), n).ok());
        ASSERT_TRUE(linear.prepare(x.data(), n).ok());
        linear.compute(got.data(), 2 * a, kOut);  // the tail first, past the last whole group
        linear.compute(got.data(), a, 2 * a);
        linear.compute(got.data(), 0, a);
        for (int64_t i = 0; i < n * kOut; ++i)
          ASSERT_EQ(got[i], want[i]) << dtype_name(type) << (repack ? " repacked" : " in place") << " n=" << n << " at " << i;
      }
    }
  }
  const auto small = make_weight_bytes(DType::q8_0, 8, 32, 1);
  QuantLinear linear(small.data(), DType::q8_0, 8, 32, {});
  std::vector<float> x(32);
  EXPECT_EQ(linear.prepare(nullptr, 1).code(), StatusCode::invalid_argument);
  EXPECT_EQ(linear.prepare(x.data(), 0).code(), StatusCode::invalid_argument);
}

// The K-quants' second term's input: r = x - d q, what the first term left
// out (Q8_K's d is an f32, so d q is rounded before the difference, in a
// unit compiled for any CPU: every level gets these bits). (The Q8_1 rows'
// is QuantizeLevel.ActivationRowIsTheTermsItStandsFor.)
TEST(ActivationTerms, ResidualIsWhatTheFirstTermLeftOut) {
  constexpr int64_t kN = 4 * kSuperBlock;
  const auto x = random_floats(kN, 3, 2.0f);
  std::vector<float> r(kN);
  std::vector<BlockQ8K> qk(kN / kSuperBlock);
  quantize_row_q8_k(x.data(), qk.data(), kN);
  q8_k_residual(x.data(), qk.data(), r.data(), kN);
  for (int64_t j = 0; j < kN; ++j) {
    const BlockQ8K& blk = qk[static_cast<size_t>(j / kSuperBlock)];
    ASSERT_EQ(r[j], x[j] - blk.d * static_cast<float>(blk.qs[j % kSuperBlock])) << j;
    ASSERT_LE(std::fabs(r[j]), 0.501f * blk.d) << j;
  }
}

// With two terms, as with one: the same bits on one thread or two, and
// through prepare()/compute() in any order of ranges.
TEST(Linear, TwoTermsGiveTheSameBitsSplitOrThreaded) {
  constexpr int64_t kOut = 53, kIn = 512;
  for (DType type : {DType::q4_0, DType::q4_1, DType::q8_0, DType::q5_0, DType::q4_k, DType::q6_k}) {
    const auto w = make_weight_bytes(type, kOut, kIn, 51);
    const auto bias = random_floats(kOut, 52);
    auto linear = make_quantized(type, w, kOut, kIn, bias, ActivationTerms::q8x2);
    const int64_t a = linear->column_alignment();
    for (int64_t n : {1, 4, 11, 37}) {  // 37: 74 term rows, the AMX panels' (four tiles and the groups)
      const auto x = random_floats(n * kIn, static_cast<uint32_t>(53 + n));
      std::vector<float> one(n * kOut), two(n * kOut), split(n * kOut, -99.0f);
      const int saved = omp_get_max_threads();
      omp_set_num_threads(1);
      ASSERT_TRUE(linear->forward(x.data(), one.data(), n).ok());
      omp_set_num_threads(2);
      ASSERT_TRUE(linear->forward(x.data(), two.data(), n).ok());
      omp_set_num_threads(saved);
      ASSERT_TRUE(linear->prepare(x.data(), n).ok());
      linear->compute(split.data(), 2 * a, kOut);
      linear->compute(split.data(), 0, 2 * a);
      for (int64_t i = 0; i < n * kOut; ++i) {
        ASSERT_EQ(one[i], two[i]) << dtype_name(type) << " n=" << n << " at " << i;
        ASSERT_EQ(one[i], split[i]) << dtype_name(type) << " n=" << n << " at " << i;
      }
    }
  }
}

// A batch longer than the drivers' scratch (kMaxScratchRows) is quantized and
// multiplied a chunk at a time: every row's outputs are the bits it gets alone.
TEST(Linear, LongBatchesGiveEachRowItsOwnBits) {
  constexpr int64_t kOut = 40, kIn = 512, kRows = 2 * kMaxScratchRows + 41;
  // Q4_1, Q8_0, Q5_0 and Q4_K: the panels' formats where the CPU has AMX
  // (whole chunks through them; the last chunk's 41 rows through the groups
  // with one term, with two its 82 term rows through five tiles and the
  // groups; the 8 columns past the last group of 16 through the ggml rows).
  for (DType type : {DType::q4_1, DType::q8_0, DType::q5_0, DType::q4_k}) {
    const auto w = make_weight_bytes(type, kOut, kIn, 61);
    for (ActivationTerms terms : {ActivationTerms::q8, ActivationTerms::q8x2}) {
      auto linear = make_quantized(type, w, kOut, kIn, {}, terms);
      const auto x = random_floats(kRows * kIn, 62);
      std::vector<float> batch(kRows * kOut), alone(kOut);
      ASSERT_TRUE(linear->forward(x.data(), batch.data(), kRows).ok());
      for (int64_t i = 0; i < kRows; ++i) {
        ASSERT_TRUE(linear->forward(x.data() + i * kIn, alone.data(), 1).ok());
        for (int64_t r = 0; r < kOut; ++r)
          ASSERT_EQ(batch[i * kOut + r], alone[r]) << dtype_name(type) << " terms " << static_cast<int>(terms)
                                                   << " row " << i << " out " << r;
      }
    }
  }
}

TEST(Linear, RejectsBadCalls) {
  const auto w = make_weight_bytes(DType::q8_0, 4, 32, 1);
  QuantLinear linear(w.data(), DType::q8_0, 4, 32, {});
  std::vector<float> x(32), y(4);
  EXPECT_EQ(linear.forward(nullptr, y.data(), 1).code(), StatusCode::invalid_argument);
  EXPECT_EQ(linear.forward(x.data(), y.data(), -1).code(), StatusCode::invalid_argument);
  EXPECT_TRUE(linear.forward(x.data(), y.data(), 0).ok());
}

}  // namespace
}  // namespace tessera::ggml
