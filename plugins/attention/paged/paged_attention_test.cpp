// The paged kernel against the reference kernel on random data laid out in
// shuffled blocks (sizes 1, 7, 16, 128): prefill, decode, chunked prefill,
// several sequences per call (enough, in the batches of nine, that one task
// takes every KV head of a sequence), GQA ratios 1, 2, 3, 4, 5, 6, 8 and 12
// (12 over two fused accumulations), head sizes 5, 24, 32, 64, 80 and 128 (64
// and 128 have their own compiled loops; 24 takes the AVX2 loops and 80 the
// general AVX-512 ones), and split-K forced to several part counts as well as
// chosen automatically. The block loops (scores, softmax, fused accumulation)
// are also checked one instruction set at a time against double precision.
//
// Tolerance: |paged - reference| <= 2e-5 + 1e-4 * |reference| per element. The
// reference accumulates in double; paged in f32 with online rescaling, a
// polynomial exp (2e-7 relative) and, with split-K, one more rescaling per
// part. V lies in [-1, 1], so outputs are bounded by 1 and the f32 error over
// a few thousand keys stays near 1e-6. Slots that are not live tokens hold
// NaN (kv_test_pool.hpp), so reading one fails the comparison.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "attention_comparison.hpp"
#include "kv_test_pool.hpp"
#include "paged_attention.hpp"
#include "paged_block_ops.hpp"
#include "plugin_loading.hpp"
#include "plugin_test_support.hpp"
#include "reference_attention.hpp"
#include "tessera/half.hpp"

namespace tessera::plugins {
const PluginLibrary* paged_attention_entry();
}

namespace tessera::plugins {
namespace {


using SeqShape = test::AttentionSeqShape;
using Case = test::AttentionCase;

ParamValues paged_params(int64_t query_rows, int64_t splits) {
  ParamValues p;
  p.set("query_rows", query_rows);
  p.set("splits", splits);
  return p;
}

// Runs this kernel and the reference on the same random problem and compares
// every output (tests/plugins/attention_comparison.hpp).
void compare(const Case& c, int32_t block_size, int64_t query_rows, int64_t splits, uint32_t seed,
             DType kv_dtype = DType::f32) {
  SCOPED_TRACE(c.name + ", block_size " + std::to_string(block_size) + ", query_rows " + std::to_string(query_rows) +
               ", splits " + std::to_string(splits) + ", KV " + std::string(dtype_name(kv_dtype)));
  PagedAttention paged(paged_params(query_rows, splits));
  test::expect_matches_reference(paged, c, block_size, seed, 2e-5, 1e-4, kv_dtype);
}

std::vector<Case> cases() {
  return {
      {"prefill 129 tokens", {{0, 129}}, 2, 1, 64},
      {"prefill 33 tokens, GQA 3", {{0, 33}}, 2, 3, 64},
      {"decode after 1000 tokens, GQA 4", {{1000, 1}}, 2, 4, 64},
      {"decode of the first token", {{0, 1}}, 1, 4, 64},
      {"chunked: 7 queries after 33", {{33, 7}}, 2, 3, 64},
      {"chunked: 129 queries after 129, GQA 4", {{129, 129}}, 1, 4, 32},
      {"four sequences in one call", {{0, 7}, {128, 1}, {20, 33}, {0, 1}}, 2, 4, 64},
      {"decode batch of three, GQA 3", {{300, 1}, {17, 1}, {1, 1}}, 3, 3, 64},
      // SmolLM2's shape: on an even team each KV head is cut in two (balance split).
      {"decode after 250 tokens, 3 KV heads, GQA 3", {{250, 1}}, 3, 3, 64},
      // Enough sequences that one task takes every KV head of a sequence.
      {"decode batch of nine, GQA 3",
       {{300, 1}, {17, 1}, {1, 1}, {64, 1}, {0, 1}, {129, 1}, {15, 1}, {16, 1}, {33, 1}}, 3, 3, 64},
      {"decode batch of nine, head_dim 128",
       {{30, 1}, {17, 1}, {1, 1}, {64, 1}, {0, 1}, {129, 1}, {15, 1}, {16, 1}, {260, 1}}, 2, 2, 128},
      {"odd head_dim 5, GQA 3", {{7, 33}, {0, 129}}, 3, 3, 5},
      // Fused accumulations of 6, 8 and 12 heads (the last in two calls), and
      // head sizes that take the AVX2 loops (24) or AVX-512 ones with a slice
      // of 16 after one of 64 (80).
      {"decode batch, GQA 6", {{100, 1}, {15, 1}, {16, 1}, {0, 1}}, 2, 6, 64},
      {"decode batch, GQA 8, head_dim 128", {{100, 1}, {33, 1}, {0, 1}}, 1, 8, 128},
      {"chunked: 3 queries after 40, GQA 12", {{40, 3}, {17, 1}}, 1, 12, 64},
      {"decode batch of nine, head_dim 24, GQA 3",
       {{30, 1}, {17, 1}, {1, 1}, {64, 1}, {0, 1}, {129, 1}, {15, 1}, {16, 1}, {33, 1}}, 2, 3, 24},
      {"prefill 40 tokens, head_dim 80, GQA 5", {{0, 40}, {100, 1}}, 2, 5, 80},
      {"large scores stress the running max", {{60, 70}}, 2, 2, 64, 40.0f},
  };
}

TEST(PagedAttention, MatchesReferenceOverBlockSizesWithAutomaticSplits) {
  uint32_t seed = 1;
  for (const Case& c : cases()) {
    for (int32_t block_size : {1, 7, 16, 128}) compare(c, block_size, 16, 0, seed++);
  }
}

TEST(PagedAttention, MatchesReferenceWithForcedSplitKAndOddQueryRuns) {
  // Parts that cut blocks unevenly, parts of a single key, and query runs
  // that split the GQA work unevenly; every split goes through the merge.
  uint32_t seed = 100;
  for (const Case& c : cases()) {
    compare(c, 7, 16, 3, seed++);
    compare(c, 16, 5, 8, seed++);
    compare(c, 1, 1, 2, seed++);
    compare(c, 128, 3, 256, seed++);
  }
}

TEST(PagedAttention, MatchesReferenceOnF16Pools) {
  // f16 pools are widened chunk by chunk; split-K and whole-sequence tasks both.
  uint32_t seed = 300;
  for (const Case& c : cases()) {
    compare(c, 7, 16, 0, seed++, DType::f16);
    compare(c, 16, 16, 3, seed++, DType::f16);
  }
  const Case long_decode{"decode after 700 tokens, f16", {{700, 1}, {300, 1}}, 2, 3, 64};
  compare(long_decode, 16, 16, 0, seed++, DType::f16);
}

TEST(PagedAttention, LongDecodeUsesSplitKAndStillMatches) {
  // Long enough for the automatic policy to split on any team of two or more threads.
  const Case c{"decode after 4000 tokens, one KV head, GQA 4", {{4000, 1}}, 1, 4, 64};
  compare(c, 16, 16, 0, 7);
  compare(c, 16, 16, 1, 8);
  compare(c, 16, 16, 5, 9);
}

using paged_attention::KernelIsa;
constexpr KernelIsa kIsas[] = {KernelIsa::generic, KernelIsa::avx2, KernelIsa::avx512};
// Head sizes for the loops of every instruction set: any (generic), multiples
// of 8 (AVX2) and of 16 (AVX-512), with 64 and 128 compiled apart and 80 as
// one AVX-512 slice of 64 and one of 16.
constexpr int32_t kLoopHeadDims[] = {5, 8, 16, 24, 48, 64, 80, 128};
// Keys per call: within one 16-key block (tails short enough to be scored key
// by key, 1..4, and longer ones), whole blocks with and without tails, and a
// whole chunk; 8-key blocks for AVX2.
constexpr int32_t kLoopKeys[] = {1, 4, 5, 7, 8, 15, 16, 17, 20, 21, 33, 256};

void note_skipped(const char* loop, KernelIsa isa, int32_t head_dim) {
  std::printf("[ skipped ] %s loop %d for head_dim %d: not on this CPU/build or head_dim does not fit it\n", loop,
              static_cast<int>(isa), head_dim);
}

// Rows of head_dim uniform values in [-1, 1] at `stride` floats apart; the
// floats between rows (other heads in a real pool) are NaN, so a loop that
// reads past a row poisons its result.
std::vector<float> strided_rows(int32_t n_rows, int32_t head_dim, int64_t stride, std::mt19937& rng) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> rows(static_cast<size_t>(n_rows * stride), std::nanf(""));  // [n_rows, stride]
  for (int32_t t = 0; t < n_rows; ++t) {
    for (int32_t d = 0; d < head_dim; ++d) rows[static_cast<size_t>(t * stride + d)] = uniform(rng);
  }
  return rows;
}

TEST(PagedAttention, ScoreLoopsOfEveryInstructionSetMatchDoubleDots) {
  // 1..8 query rows (GQA groups) against 1..256 keys: full 16-key (AVX-512)
  // and 8-key (AVX2) blocks and every kind of tail. Tolerance: 1e-6 * sum
  // |q_d k_d| + 1e-7, the f32 rounding of a dot product of at most 128 terms in
  // any summation order. Scores past n, up to ld_s, must stay untouched.
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  constexpr float kUntouched = -7.0f;
  for (int32_t head_dim : kLoopHeadDims) {
    const int64_t stride = 2 * head_dim + 3;  // rows of other heads lie between
    for (int32_t n : kLoopKeys) {
      const std::vector<float> k = strided_rows(n, head_dim, stride, rng);  // [n, stride]
      for (int32_t n_q = 1; n_q <= 8; ++n_q) {
        const int32_t ld_s = n + 3;
        std::vector<float> q(static_cast<size_t>(n_q * head_dim));  // [n_q, head_dim]
        for (float& x : q) x = uniform(rng);
        for (KernelIsa isa : kIsas) {
          SCOPED_TRACE("isa " + std::to_string(static_cast<int>(isa)) + " head_dim " + std::to_string(head_dim) +
                       " n " + std::to_string(n) + " n_q " + std::to_string(n_q));
          std::vector<float> s(static_cast<size_t>(n_q * ld_s), kUntouched);  // [n_q, ld_s]
          if (!paged_attention::group_scores_on(isa, q.data(), n_q, k.data(), stride, head_dim, n, s.data(), ld_s)) {
            if (n == 1 && n_q == 1) note_skipped("score", isa, head_dim);
            continue;
          }
          for (int32_t g = 0; g < n_q; ++g) {
            for (int32_t t = 0; t < n; ++t) {
              double want = 0.0, magnitude = 0.0;
              for (int32_t d = 0; d < head_dim; ++d) {
                const double p = static_cast<double>(q[static_cast<size_t>(g * head_dim + d)]) *
                                 k[static_cast<size_t>(t * stride + d)];
                want += p;
                magnitude += std::abs(p);
              }
              ASSERT_NEAR(s[static_cast<size_t>(g * ld_s + t)], want, 1e-6 * magnitude + 1e-7)
                  << "g " << g << " t " << t;
            }
            for (int32_t t = n; t < ld_s; ++t)
              ASSERT_EQ(s[static_cast<size_t>(g * ld_s + t)], kUntouched) << "wrote past the keys";
          }
        }
      }
    }
  }
}

TEST(PagedAttention, SoftmaxStepsOfEveryInstructionSetMatchDoubleExp) {
  // A first step (m = -inf) and a second one whose chunk raises the running
  // max or leaves it, over lengths with and without vector tails. The max is
  // exact. exp(x) comes within 6e-8 |x| + 5e-7 relative: the f32 rounding of
  // x = s - m' and the polynomial (2e-7) with its own roundings; l adds the
  // rounding of an f32 sum of n weights.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-12.0f, 12.0f);
  constexpr float kUntouched = 99.0f;
  for (int32_t n : kLoopKeys) {
    for (float previous_max : {-std::numeric_limits<float>::infinity(), -20.0f, 3.0f, 30.0f}) {
      std::vector<float> scores(static_cast<size_t>(n));
      for (float& x : scores) x = uniform(rng);
      const float previous_sum = std::isinf(previous_max) ? 0.0f : 2.5f;
      float m_want = previous_max;
      for (float x : scores) m_want = std::max(m_want, x);
      for (KernelIsa isa : kIsas) {
        SCOPED_TRACE("isa " + std::to_string(static_cast<int>(isa)) + " n " + std::to_string(n) + " previous max " +
                     std::to_string(previous_max));
        std::vector<float> s = scores;
        s.push_back(kUntouched);  // [n + 1]
        float m = previous_max, l = previous_sum, correction = -1.0f;
        if (!paged_attention::softmax_update_on(isa, s.data(), n, &m, &l, &correction)) {
          if (n == 1 && std::isinf(previous_max)) note_skipped("softmax", isa, 0);
          continue;
        }
        ASSERT_EQ(m, m_want);
        // e^-87 (about 1e-38) stands for 0, the correction of a first step.
        auto exp_tolerance = [](double x, double value) {
          return value == 0.0 ? 1e-37 : (6e-8 * std::abs(x) + 5e-7) * value + 1e-37;
        };
        const double correction_arg = static_cast<double>(previous_max) - m_want;
        const double correction_want = std::exp(correction_arg);
        EXPECT_NEAR(correction, correction_want, exp_tolerance(correction_arg, correction_want));
        double sum = 0.0, largest_arg = std::isfinite(correction_arg) ? std::abs(correction_arg) : 0.0;
        for (int32_t t = 0; t < n; ++t) {
          const double x = static_cast<double>(scores[static_cast<size_t>(t)]) - m_want;
          const double w = std::exp(x);
          sum += w;
          largest_arg = std::max(largest_arg, std::abs(x));
          ASSERT_NEAR(s[static_cast<size_t>(t)], w, exp_tolerance(x, w)) << "t " << t;
        }
        EXPECT_EQ(s[static_cast<size_t>(n)], kUntouched) << "wrote past the scores";
        const double l_want = previous_sum * correction_want + sum;
        EXPECT_NEAR(l, l_want, exp_tolerance(largest_arg, l_want) + n * 6e-8 * l_want);
      }
    }
  }
}

TEST(PagedAttention, FusedValueAccumulationOfEveryInstructionSetMatchesDoubleSums) {
  // n_rows heads of a group (1..8, and 11: more than one pass of every loop)
  // over keys cut into runs of uneven lengths, each run in its own rows with
  // NaN between them; the weights of a row are followed by NaN up to ld_p.
  // Tolerance: (n + 2) * 1.2e-7 * (|acc c| + sum |p_t v_t|), the bound of a
  // recursive f32 sum of the n + 1 terms in any order. The row after the last
  // accumulator must stay untouched.
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f), weight(0.0f, 1.0f);
  constexpr int32_t kRunLengths[] = {16, 7, 1, 16, 3, 12};
  constexpr float kUntouched = 4321.0f;
  for (int32_t head_dim : kLoopHeadDims) {
    const int64_t stride = 2 * head_dim + 3;
    for (int32_t n : kLoopKeys) {
      // Runs covering n keys, each in its own allocation.
      std::vector<std::vector<float>> run_rows;
      std::vector<paged_attention::ValueRun> runs;
      for (int32_t done = 0, i = 0; done < n; ++i) {
        const int32_t take = std::min(kRunLengths[i % 6], n - done);
        run_rows.push_back(strided_rows(take, head_dim, stride, rng));  // [take, stride]
        done += take;
      }
      for (size_t i = 0, done = 0; i < run_rows.size(); ++i) {
        const auto take = static_cast<int32_t>(run_rows[i].size() / static_cast<size_t>(stride));
        runs.push_back({run_rows[i].data(), take});
        done += static_cast<size_t>(take);
      }
      auto v_at = [&](int32_t t, int32_t d) {  // V row of key t (over all runs), element d
        for (const paged_attention::ValueRun& run : runs) {
          if (t < run.n) return run.v[t * stride + d];
          t -= run.n;
        }
        return std::nanf("");
      };
      for (int32_t n_rows : {1, 2, 3, 4, 5, 6, 7, 8, 11}) {
        const int64_t ld_p = n + 5;
        std::vector<float> p(static_cast<size_t>(n_rows * ld_p), std::nanf(""));  // [n_rows, ld_p]
        for (int32_t g = 0; g < n_rows; ++g) {
          for (int32_t t = 0; t < n; ++t) p[static_cast<size_t>(g * ld_p + t)] = weight(rng);
        }
        std::vector<float> correction(static_cast<size_t>(n_rows));  // [n_rows]
        for (float& c : correction) c = weight(rng);
        std::vector<float> acc0(static_cast<size_t>((n_rows + 1) * head_dim), kUntouched);  // [n_rows + 1, head_dim]
        for (size_t i = 0; i < static_cast<size_t>(n_rows * head_dim); ++i) acc0[i] = uniform(rng);
        for (KernelIsa isa : kIsas) {
          SCOPED_TRACE("isa " + std::to_string(static_cast<int>(isa)) + " head_dim " + std::to_string(head_dim) +
                       " n " + std::to_string(n) + " n_rows " + std::to_string(n_rows));
          std::vector<float> acc = acc0;
          if (!paged_attention::accumulate_group_on(isa, p.data(), ld_p, n_rows, correction.data(), runs.data(),
                                                    static_cast<int32_t>(runs.size()), stride, head_dim, acc.data())) {
            if (n == 1 && n_rows == 1) note_skipped("accumulation", isa, head_dim);
            continue;
          }
          for (int32_t g = 0; g < n_rows; ++g) {
            for (int32_t d = 0; d < head_dim; ++d) {
              const size_t i = static_cast<size_t>(g * head_dim + d);
              double want = static_cast<double>(acc0[i]) * correction[static_cast<size_t>(g)];
              double magnitude = std::abs(want);
              for (int32_t t = 0; t < n; ++t) {
                const double term = static_cast<double>(p[static_cast<size_t>(g * ld_p + t)]) * v_at(t, d);
                want += term;
                magnitude += std::abs(term);
              }
              ASSERT_NEAR(acc[i], want, (n + 2) * 1.2e-7 * magnitude) << "g " << g << " d " << d;
            }
          }
          for (int32_t d = 0; d < head_dim; ++d) {
            ASSERT_EQ(acc[static_cast<size_t>(n_rows * head_dim + d)], kUntouched) << "wrote past the rows";
          }
        }
      }
    }
  }
}

// f16 rows for the in-place loops: `rows` rounded to f16 (the gaps between
// rows keep NaN), and the same values widened back to f32 for the f32 loops.
struct F16Rows {
  std::vector<uint16_t> bits;   // [n_rows, stride]
  std::vector<float> widened;   // [n_rows, stride]
};
F16Rows to_f16_rows(const std::vector<float>& rows) {
  F16Rows r;
  for (float x : rows) r.bits.push_back(f32_to_f16(x));
  for (uint16_t h : r.bits) r.widened.push_back(f16_to_f32(h));
  return r;
}

TEST(PagedAttention, F16LoopsGiveTheF32LoopsResultsOnTheWidenedRows) {
  // The f16 loops widen each row in registers and then do the f32 loops'
  // arithmetic, so on the same values the results must be identical: scores
  // for 1..8 query rows, and the fused accumulation of 1..8 and 11 rows over
  // runs of uneven lengths, for every head size the explicit loops take.
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f), weight(0.0f, 1.0f);
  constexpr int32_t kRunLengths[] = {16, 7, 1, 16, 3, 12};
  for (int32_t head_dim : kLoopHeadDims) {
    const int64_t stride = 2 * head_dim + 3;
    for (int32_t n : kLoopKeys) {
      const F16Rows k = to_f16_rows(strided_rows(n, head_dim, stride, rng));  // [n, stride]
      std::vector<F16Rows> run_rows;
      std::vector<paged_attention::ValueRun> runs;
      std::vector<paged_attention::ValueRunF16> runs_f16;
      for (int32_t done = 0, i = 0; done < n; ++i) {
        const int32_t take = std::min(kRunLengths[i % 6], n - done);
        run_rows.push_back(to_f16_rows(strided_rows(take, head_dim, stride, rng)));  // [take, stride]
        done += take;
      }
      for (const F16Rows& r : run_rows) {
        const auto take = static_cast<int32_t>(r.bits.size() / static_cast<size_t>(stride));
        runs.push_back({r.widened.data(), take});
        runs_f16.push_back({r.bits.data(), take});
      }
      for (KernelIsa isa : {KernelIsa::avx2, KernelIsa::avx512}) {
        SCOPED_TRACE("isa " + std::to_string(static_cast<int>(isa)) + " head_dim " + std::to_string(head_dim) +
                     " n " + std::to_string(n));
        for (int32_t n_q = 1; n_q <= 8; ++n_q) {
          const int32_t ld_s = n + 3;
          std::vector<float> q(static_cast<size_t>(n_q * head_dim));  // [n_q, head_dim]
          for (float& x : q) x = uniform(rng);
          std::vector<float> s32(static_cast<size_t>(n_q * ld_s), -7.0f), s16 = s32;  // [n_q, ld_s]
          if (!paged_attention::group_scores_f16_on(isa, q.data(), n_q, k.bits.data(), stride, head_dim, n,
                                                    s16.data(), ld_s)) {
            if (n == 1 && n_q == 1) note_skipped("f16 score", isa, head_dim);
            break;
          }
          ASSERT_TRUE(paged_attention::group_scores_on(isa, q.data(), n_q, k.widened.data(), stride, head_dim, n,
                                                       s32.data(), ld_s));
          ASSERT_EQ(s16, s32) << "n_q " << n_q;
        }
        for (int32_t n_rows : {1, 2, 3, 4, 5, 6, 7, 8, 11}) {
          const int64_t ld_p = n + 5;
          std::vector<float> p(static_cast<size_t>(n_rows * ld_p));  // [n_rows, ld_p]
          for (float& x : p) x = weight(rng);
          std::vector<float> correction(static_cast<size_t>(n_rows));  // [n_rows]
          for (float& c : correction) c = weight(rng);
          std::vector<float> acc32(static_cast<size_t>(n_rows * head_dim));  // [n_rows, head_dim]
          for (float& x : acc32) x = uniform(rng);
          std::vector<float> acc16 = acc32;
          if (!paged_attention::accumulate_group_f16_on(isa, p.data(), ld_p, n_rows, correction.data(),
                                                        runs_f16.data(), static_cast<int32_t>(runs_f16.size()),
                                                        stride, head_dim, acc16.data())) {
            break;
          }
          ASSERT_TRUE(paged_attention::accumulate_group_on(isa, p.data(), ld_p, n_rows, correction.data(),
                                                           runs.data(), static_cast<int32_t>(runs.size()), stride,
                                                           head_dim, acc32.data()));
          ASSERT_EQ(acc16, acc32) << "n_rows " << n_rows;
        }
      }
    }
  }
  // No f16 loop for the portable build or an odd head size: the kernel widens instead.
  EXPECT_FALSE(paged_attention::has_f16_loops(5));
}

TEST(PagedAttention, EntryDescribesThePluginAndDefaultsWork) {
  const PluginInfo& info = test::expect_single_plugin(paged_attention_entry(), PluginFamily::attention, "paged");
  std::string error;
  std::unique_ptr<PluginObject> object(info.create(test::default_params(info), &error));
  ASSERT_NE(object, nullptr) << error;
  auto* kernel = static_cast<PagedAttention*>(static_cast<AttentionKernel*>(object.get()));
  EXPECT_EQ(kernel->query_rows(), 16);
  EXPECT_EQ(kernel->splits(), 0);
  std::string why;
  for (int32_t b : {1, 3, 16, 128, 4096, 1 << 20}) EXPECT_TRUE(kernel->supports_block_size(b, &why));
}

TEST(PagedAttention, RejectsBadParametersAndArguments) {
  std::string error;
  EXPECT_EQ(make_plugin<PagedAttention>(paged_params(0, 0), &error), nullptr);
  EXPECT_NE(error.find("query_rows"), std::string::npos) << error;
  EXPECT_EQ(make_plugin<PagedAttention>(paged_params(16, -1), &error), nullptr);
  EXPECT_NE(error.find("splits"), std::string::npos) << error;

  // Argument checks are shared with the reference kernel; samples here.
  std::mt19937 rng(7);
  const std::vector<int32_t> lengths{10};
  test::KvTestPool pool = test::make_shuffled_pool(lengths, 4, 2, 8, rng);
  std::vector<float> q(6 * 8), out(q.size());
  const AttentionSeq seq{pool.tables[0], 9, 2, 0};
  AttentionArgs a;
  a.q = q.data();
  a.out = out.data();
  a.n_head = 6;
  a.n_kv_head = 4;  // 6 heads on 4 KV heads
  a.head_dim = 8;
  a.scale = 1.0f;
  a.kv = pool.view();
  a.seqs = {&seq, 1};
  PagedAttention paged(paged_params(16, 0));
  Status st = paged.forward(a);
  EXPECT_EQ(st.code(), StatusCode::invalid_argument);
  EXPECT_NE(st.message().find("attention paged"), std::string::npos) << st.message();
  const AttentionSeq too_long{pool.tables[0], 12, 1, 0};  // 13 positions, the table covers 12
  a.n_kv_head = 2;
  a.seqs = {&too_long, 1};
  EXPECT_EQ(paged.forward(a).code(), StatusCode::invalid_argument);
  const AttentionSeq nothing{{}, 0, 0, 0};
  a.seqs = {&nothing, 1};
  EXPECT_TRUE(paged.forward(a).ok()) << "no queries: nothing to do";
}

TEST(PagedAttention, BuiltLibraryLoadsAndDescribesThePlugin) {
  test::LoadedLibrary loaded = test::load_built_plugin("libtessera_attention_paged.so");
  ASSERT_NE(loaded.entry, nullptr);
  const PluginInfo& info = test::expect_single_plugin(loaded.entry, PluginFamily::attention, "paged");
  std::string error;
  std::unique_ptr<PluginObject> object(info.create(test::default_params(info), &error));
  EXPECT_NE(object, nullptr) << error;
}

}  // namespace
}  // namespace tessera::plugins
