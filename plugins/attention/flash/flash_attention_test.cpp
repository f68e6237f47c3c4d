// The flash kernel against the reference kernel on random data: prefill,
// decode, chunked prefill, several sequences per call, GQA ratios 1, 3 and 4,
// odd lengths, KV in shuffled blocks of size 1, 16 and 128, and several tilings.
//
// Tolerance: |flash - reference| <= 2e-5 + 1e-4 * |reference| per element. The
// reference accumulates in double, flash in f32 with online rescaling; V lies
// in [-1, 1], so outputs are bounded by 1 and f32 rounding over a few thousand
// keys stays near 1e-6.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "flash_attention.hpp"
#include "attention_comparison.hpp"
#include "kv_test_pool.hpp"
#include "plugin_loading.hpp"
#include "plugin_test_support.hpp"
#include "reference_attention.hpp"

namespace tessera::plugins {
const PluginLibrary* flash_attention_entry();
}

namespace tessera::plugins {
namespace {


using SeqShape = test::AttentionSeqShape;
using Case = test::AttentionCase;

ParamValues flash_params(int64_t tile, int64_t query_rows) {
  ParamValues p;
  p.set("tile", tile);
  p.set("query_rows", query_rows);
  return p;
}

// Runs this kernel and the reference on the same random problem and compares
// every output (tests/plugins/attention_comparison.hpp).
void compare(const Case& c, int32_t block_size, int64_t tile, int64_t query_rows, uint32_t seed,
             DType kv_dtype = DType::f32) {
  SCOPED_TRACE(c.name + ", block_size " + std::to_string(block_size) + ", tile " + std::to_string(tile) +
               ", query_rows " + std::to_string(query_rows) + ", KV " + std::string(dtype_name(kv_dtype)));
  FlashAttention flash(flash_params(tile, query_rows));
  test::expect_matches_reference(flash, c, block_size, seed, 2e-5, 1e-4, kv_dtype);
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
      {"odd head_dim 5, GQA 3", {{7, 33}, {0, 129}}, 3, 3, 5},
      {"large scores stress the running max", {{60, 70}}, 2, 2, 64, 40.0f},
  };
}

TEST(FlashAttention, MatchesReferenceWithDefaultTiling) {
  uint32_t seed = 1;
  for (const Case& c : cases()) {
    for (int32_t block_size : {1, 16, 128}) compare(c, block_size, 64, 16, seed++);
  }
}

TEST(FlashAttention, MatchesReferenceWithOddTilings) {
  // Tiles that straddle blocks (tile 1, 7, 100 against blocks of 16 and 128)
  // and query blocks that split the GQA work unevenly.
  uint32_t seed = 100;
  for (const Case& c : cases()) {
    compare(c, 16, 1, 1, seed++);
    compare(c, 16, 7, 5, seed++);
    compare(c, 128, 100, 3, seed++);
  }
}

TEST(FlashAttention, MatchesReferenceOnF16Pools) {
  // Tiles gather f16 rows and widen them as they transpose K.
  uint32_t seed = 300;
  for (const Case& c : cases()) {
    compare(c, 16, 64, 16, seed++, DType::f16);
    compare(c, 128, 7, 5, seed++, DType::f16);
  }
}

TEST(FlashAttention, EntryDescribesThePluginAndDefaultsWork) {
  const PluginInfo& info = test::expect_single_plugin(flash_attention_entry(), PluginFamily::attention, "flash");
  std::string error;
  std::unique_ptr<PluginObject> object(info.create(test::default_params(info), &error));
  ASSERT_NE(object, nullptr) << error;
  auto* kernel = static_cast<FlashAttention*>(static_cast<AttentionKernel*>(object.get()));
  EXPECT_EQ(kernel->tile(), 64);
  EXPECT_EQ(kernel->query_rows(), 16);
  std::string why;
  for (int32_t b : {1, 3, 16, 128, 4096}) EXPECT_TRUE(kernel->supports_block_size(b, &why));
}

TEST(FlashAttention, RejectsBadParametersAndArguments) {
  std::string error;
  EXPECT_EQ(make_plugin<FlashAttention>(flash_params(0, 16), &error), nullptr);
  EXPECT_NE(error.find("tile"), std::string::npos) << error;

  // Argument checks are shared with the reference kernel; one sample here.
  std::mt19937 rng(7);
  const std::vector<int32_t> lengths{10};
  test::KvTestPool pool = test::make_shuffled_pool(lengths, 4, 2, 8, rng);
  std::vector<float> q(6 * 8), out(q.size());
  const AttentionSeq seq{pool.tables[0], 9, 2, 0};  // 11 positions, the table covers 12: fine
  AttentionArgs a;
  a.q = q.data();
  a.out = out.data();
  a.n_head = 6;
  a.n_kv_head = 4;  // 6 heads on 4 KV heads
  a.head_dim = 8;
  a.scale = 1.0f;
  a.kv = pool.view();
  a.seqs = {&seq, 1};
  FlashAttention flash(flash_params(64, 16));
  EXPECT_EQ(flash.forward(a).code(), StatusCode::invalid_argument);
  const AttentionSeq too_long{pool.tables[0], 12, 1, 0};
  a.n_kv_head = 2;
  a.seqs = {&too_long, 1};
  EXPECT_EQ(flash.forward(a).code(), StatusCode::invalid_argument);
}

TEST(FlashAttention, BuiltLibraryLoadsAndDescribesThePlugin) {
  test::LoadedLibrary loaded = test::load_built_plugin("libtessera_attention_flash.so");
  ASSERT_NE(loaded.entry, nullptr);
  const PluginInfo& info = test::expect_single_plugin(loaded.entry, PluginFamily::attention, "flash");
  std::string error;
  std::unique_ptr<PluginObject> object(info.create(test::default_params(info), &error));
  EXPECT_NE(object, nullptr) << error;
}

}  // namespace
}  // namespace tessera::plugins
