// The paged kernel against the reference kernel on random data laid out in
// shuffled blocks (sizes 1, 7, 16, 128): prefill, decode, chunked prefill,
// several sequences per call (enough, in the batches of nine, that one task
// takes every KV head of a sequence), GQA ratios 1, 2, 3 and 4, head sizes 5,
// 32, 64 and 128 (the last two have their own compiled loops), and
// split-K forced to several part counts as well as chosen automatically.
//
// Tolerance: |paged - reference| <= 2e-5 + 1e-4 * |reference| per element. The
// reference accumulates in double; paged in f32 with online rescaling, a
// polynomial exp (2e-7 relative) and, with split-K, one more rescaling per
// part. V lies in [-1, 1], so outputs are bounded by 1 and the f32 error over
// a few thousand keys stays near 1e-6. Slots that are not live tokens hold
// NaN (kv_test_pool.hpp), so reading one fails the comparison.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
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

namespace tessera::plugins {
const PluginLibrary* paged_attention_entry();
}

namespace tessera::plugins {
namespace {

// Built twice: with the SIMD clones and, as test_attention_paged_baseline,
// without them; distinct suite names keep the CTest names apart.
#ifdef TESSERA_NO_SIMD_CLONES
#define PAGED_SUITE PagedAttentionBaseline
#else
#define PAGED_SUITE PagedAttention
#endif

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
      // Enough sequences that one task takes every KV head of a sequence.
      {"decode batch of nine, GQA 3",
       {{300, 1}, {17, 1}, {1, 1}, {64, 1}, {0, 1}, {129, 1}, {15, 1}, {16, 1}, {33, 1}}, 3, 3, 64},
      {"decode batch of nine, head_dim 128",
       {{30, 1}, {17, 1}, {1, 1}, {64, 1}, {0, 1}, {129, 1}, {15, 1}, {16, 1}, {260, 1}}, 2, 2, 128},
      {"odd head_dim 5, GQA 3", {{7, 33}, {0, 129}}, 3, 3, 5},
      {"large scores stress the running max", {{60, 70}}, 2, 2, 64, 40.0f},
  };
}

TEST(PAGED_SUITE, MatchesReferenceOverBlockSizesWithAutomaticSplits) {
  uint32_t seed = 1;
  for (const Case& c : cases()) {
    for (int32_t block_size : {1, 7, 16, 128}) compare(c, block_size, 16, 0, seed++);
  }
}

TEST(PAGED_SUITE, MatchesReferenceWithForcedSplitKAndOddQueryRuns) {
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

TEST(PAGED_SUITE, MatchesReferenceOnF16Pools) {
  // f16 pools are widened chunk by chunk; split-K and whole-sequence tasks both.
  uint32_t seed = 300;
  for (const Case& c : cases()) {
    compare(c, 7, 16, 0, seed++, DType::f16);
    compare(c, 16, 16, 3, seed++, DType::f16);
  }
  const Case long_decode{"decode after 700 tokens, f16", {{700, 1}, {300, 1}}, 2, 3, 64};
  compare(long_decode, 16, 16, 0, seed++, DType::f16);
}

TEST(PAGED_SUITE, LongDecodeUsesSplitKAndStillMatches) {
  // Long enough for the automatic policy to split on any team of two or more threads.
  const Case c{"decode after 4000 tokens, one KV head, GQA 4", {{4000, 1}}, 1, 4, 64};
  compare(c, 16, 16, 0, 7);
  compare(c, 16, 16, 1, 8);
  compare(c, 16, 16, 5, 9);
}

TEST(PAGED_SUITE, ScoreLoopsOfEveryInstructionSetMatchDoubleDots) {
  // Tolerance: 1e-6 * sum |q_d k_d| + 1e-7, the f32 rounding of a dot product of
  // at most 128 terms in any summation order.
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (int32_t head_dim : {5, 8, 16, 24, 48, 64, 128}) {
    constexpr int32_t kGroup = 3, kKeys = 21, kLd = 32;
    const int64_t stride = 2 * head_dim + 3;  // rows of other heads lie between
    std::vector<float> q(static_cast<size_t>(kGroup * head_dim)), k(static_cast<size_t>(kKeys * stride));
    for (float& x : q) x = uniform(rng);
    for (float& x : k) x = uniform(rng);
    for (auto isa : {paged_attention::ScoresIsa::generic, paged_attention::ScoresIsa::avx2,
                     paged_attention::ScoresIsa::avx512}) {
      std::vector<float> s(static_cast<size_t>(kGroup * kLd), -7.0f);
      if (!paged_attention::group_scores_on(isa, q.data(), kGroup, k.data(), stride, head_dim, kKeys, s.data(), kLd)) {
        std::printf("[ skipped ] score loop %d for head_dim %d: not on this CPU/build or head_dim does not fit it\n",
                    static_cast<int>(isa), head_dim);
        continue;
      }
      for (int32_t g = 0; g < kGroup; ++g) {
        for (int32_t t = 0; t < kKeys; ++t) {
          double want = 0.0, magnitude = 0.0;
          for (int32_t d = 0; d < head_dim; ++d) {
            const double p = static_cast<double>(q[static_cast<size_t>(g * head_dim + d)]) * k[static_cast<size_t>(t * stride + d)];
            want += p;
            magnitude += std::abs(p);
          }
          EXPECT_NEAR(s[static_cast<size_t>(g * kLd + t)], want, 1e-6 * magnitude + 1e-7)
              << "isa " << static_cast<int>(isa) << " head_dim " << head_dim << " g " << g << " t " << t;
        }
        EXPECT_EQ(s[static_cast<size_t>(g * kLd + kKeys)], -7.0f) << "wrote past the keys";
      }
    }
  }
}

TEST(PAGED_SUITE, EntryDescribesThePluginAndDefaultsWork) {
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

TEST(PAGED_SUITE, RejectsBadParametersAndArguments) {
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

TEST(PAGED_SUITE, BuiltLibraryLoadsAndDescribesThePlugin) {
  test::LoadedLibrary loaded = test::load_built_plugin("libtessera_attention_paged.so");
  ASSERT_NE(loaded.entry, nullptr);
  const PluginInfo& info = test::expect_single_plugin(loaded.entry, PluginFamily::attention, "paged");
  std::string error;
  std::unique_ptr<PluginObject> object(info.create(test::default_params(info), &error));
  EXPECT_NE(object, nullptr) << error;
}

}  // namespace
}  // namespace tessera::plugins
