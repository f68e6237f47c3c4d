// The paged cache as a SequenceMemory: parameters and configure(), K/V written and
// read through layer views and block tables (forks diverge, copy-on-write
// copies every layer, reused prefixes hold the right K/V), stats, and the
// built library.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "kv_tagged_rows.hpp"
#include "memory_conformance.hpp"
#include "paged_cache.hpp"
#include "plugin_loading.hpp"
#include "plugin_test_support.hpp"
#include "state_specs.hpp"

namespace tessera::plugins {
const PluginLibrary* paged_kvcache_entry();
}

namespace tessera::plugins {
namespace {

constexpr int32_t kLayers = 2;

// 2 layers, 2 KV heads of 4 floats: 2 * 2 * 2 * 4 * 4 = 128 bytes per token.
SequenceStateSpec small_spec() {
  static const test::OwnedStateSpec owned = test::attention_spec(kLayers, 2, 4, 64);
  return owned.spec();
}

ParamValues params(int64_t block_size, int64_t memory, int64_t max_sequences = 8, const char* dtype = "f32") {
  ParamValues p;
  p.set("block_size", block_size);
  p.set("memory", memory);
  p.set("max_sequences", max_sequences);
  p.set("dtype", std::string(dtype));
  return p;
}

// block_size 4, 10 blocks of 4 * 128 bytes.
std::unique_ptr<PagedKvCache> configured(int64_t block_size = 4, int64_t n_blocks = 10) {
  auto cache = std::make_unique<PagedKvCache>(params(block_size, n_blocks * block_size * 128));
  const Status st = cache->configure(small_spec());
  EXPECT_TRUE(st.ok()) << st.message();
  return cache;
}

void write_token(PagedKvCache& cache, SeqId seq, int64_t pos, float tag) {
  test::write_tagged_token(cache, kLayers, seq, pos, tag);
}

bool token_is(PagedKvCache& cache, SeqId seq, int64_t pos, float tag) {
  return test::token_has_tag(cache, kLayers, seq, pos, tag);
}

// Appends n tokens tagged first_tag, first_tag + 1, ...
void append_tagged(PagedKvCache& cache, SeqId seq, int32_t n, float first_tag) {
  const int32_t start = cache.length(seq);
  ASSERT_TRUE(cache.append_slots(seq, n).ok());
  for (int32_t i = 0; i < n; ++i) write_token(cache, seq, start + i, first_tag + static_cast<float>(i));
}

TEST(PagedKvCache, EntryDeclaresItsParametersAndTheFactoryWorks) {
  const PluginInfo& info = test::expect_single_plugin(paged_kvcache_entry(), PluginFamily::kvcache, "paged");
  ASSERT_EQ(info.param_count, 7u);
  EXPECT_STREQ(info.params[0].name, "block_size");
  EXPECT_STREQ(info.params[0].default_value, "16");
  EXPECT_STREQ(info.params[1].name, "memory");
  EXPECT_STREQ(info.params[1].default_value, "\"512MiB\"");  // parsed by the core's byte-size reader
  EXPECT_STREQ(info.params[3].name, "dtype");
  EXPECT_STREQ(info.params[3].choices, "f32|f16");
  EXPECT_STREQ(info.params[2].name, "max_sequences");
  EXPECT_STREQ(info.params[2].default_value, "256");
  EXPECT_STREQ(info.params[4].name, "checkpoints");
  EXPECT_STREQ(info.params[5].name, "prefix_snapshots");
  EXPECT_STREQ(info.params[6].name, "snapshot_interval");

  // test::default_params reads plain integers only, so the 512MiB default is spelled out here.
  ParamValues values = params(16, 512ll << 20, 256);
  std::string error;
  std::unique_ptr<PluginObject> object(info.create(values, &error));
  ASSERT_NE(object, nullptr) << error;
  auto* cache = static_cast<SequenceMemory*>(object.get());
  ASSERT_TRUE(cache->configure(small_spec()).ok());
  EXPECT_EQ(cache->layer(0).block_size, 16);
  // 512 MiB / (16 tokens * 128 bytes) blocks.
  EXPECT_EQ(cache->stats().blocks_total, (512ll << 20) / (16 * 128));
  EXPECT_EQ(cache->stats().bytes_reserved, 512ull << 20);
}

TEST(PagedKvCache, LayerViewsDescribeTheBlockPools) {
  auto cache = configured(4, 10);
  KvLayerView view = cache->layer(1);
  EXPECT_EQ(view.block_size, 4);
  EXPECT_EQ(view.n_kv_head, 2);
  EXPECT_EQ(view.head_dim, 4);
  EXPECT_NE(view.k, nullptr);
  EXPECT_NE(view.v, nullptr);
  EXPECT_NE(view.k, cache->layer(0).k);
  EXPECT_EQ(cache->layer(kLayers).k, nullptr) << "a layer past n_layer has no view";
  EXPECT_EQ(cache->layer(-1).k, nullptr);
}

TEST(PagedKvCache, SequencesKeepTheirOwnKvAcrossManyBlocks) {
  auto cache = configured(4, 10);
  auto a = cache->create_sequence();
  auto b = cache->create_sequence();
  ASSERT_TRUE(a.ok() && b.ok());
  // Interleaved growth scatters both sequences' blocks over the pool.
  for (int step = 0; step < 4; ++step) {
    append_tagged(*cache, *a, 3, 1000.0f + 3 * step);
    append_tagged(*cache, *b, 2, 2000.0f + 2 * step);
  }
  EXPECT_EQ(cache->length(*a), 12);
  EXPECT_EQ(cache->length(*b), 8);
  for (int p = 0; p < 12; ++p) EXPECT_TRUE(token_is(*cache, *a, p, 1000.0f + p)) << p;
  for (int p = 0; p < 8; ++p) EXPECT_TRUE(token_is(*cache, *b, p, 2000.0f + p)) << p;
}

TEST(PagedKvCache, ForkedSequencesShareAPrefixThenDivergeWithoutSeeingEachOther) {
  auto cache = configured(4, 10);
  auto a = cache->create_sequence();
  ASSERT_TRUE(a.ok());
  append_tagged(*cache, *a, 6, 10.0f);  // one full block, one half-full block
  auto f = cache->fork(*a);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(cache->stats().blocks_used, 2) << "the fork shares both blocks";

  append_tagged(*cache, *f, 3, 500.0f);  // copy-on-write of the shared half-full block
  append_tagged(*cache, *a, 3, 900.0f);
  EXPECT_EQ(cache->block_table(*a)[0], cache->block_table(*f)[0]) << "the full block stays shared";
  EXPECT_NE(cache->block_table(*a)[1], cache->block_table(*f)[1]);
  for (int p = 0; p < 6; ++p) {
    EXPECT_TRUE(token_is(*cache, *a, p, 10.0f + p)) << p;
    EXPECT_TRUE(token_is(*cache, *f, p, 10.0f + p)) << "the copy carries every layer's K and V, position " << p;
  }
  for (int p = 0; p < 3; ++p) {
    EXPECT_TRUE(token_is(*cache, *a, 6 + p, 900.0f + p)) << p;
    EXPECT_TRUE(token_is(*cache, *f, 6 + p, 500.0f + p)) << p;
  }
}

TEST(PagedKvCache, AReusedPrefixReadsTheKvItsFirstOwnerWrote) {
  auto cache = configured(4, 10);
  const std::vector<int32_t> prompt{5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
  auto a = cache->create_sequence();
  ASSERT_TRUE(a.ok());
  append_tagged(*cache, *a, 10, 40.0f);
  cache->record_tokens(*a, prompt);
  cache->release(*a);  // the cached blocks outlive the sequence

  auto b = cache->create_sequence();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(cache->reuse_prefix(*b, prompt), 8);
  EXPECT_EQ(cache->length(*b), 8);
  for (int p = 0; p < 8; ++p) EXPECT_TRUE(token_is(*cache, *b, p, 40.0f + p)) << p;
  append_tagged(*cache, *b, 2, 70.0f);
  EXPECT_TRUE(token_is(*cache, *b, 9, 71.0f));
  EXPECT_EQ(cache->stats().prefix_hit_tokens, 8);
}

TEST(PagedKvCache, StatsCountBlocksAndSharedTokensOnce) {
  auto cache = configured(4, 10);  // 512 bytes per block
  MemoryStats empty = cache->stats();
  EXPECT_EQ(empty.blocks_total, 10);
  EXPECT_EQ(empty.blocks_used, 0);
  EXPECT_EQ(empty.bytes_reserved, 10u * 512u);
  EXPECT_EQ(empty.bytes_allocated, 0u);
  EXPECT_EQ(empty.bytes_live, 0u);

  auto a = cache->create_sequence();
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(cache->append_slots(*a, 5).ok());
  auto f = cache->fork(*a);
  ASSERT_TRUE(f.ok());
  MemoryStats s = cache->stats();
  EXPECT_EQ(s.blocks_used, 2);
  EXPECT_EQ(s.bytes_allocated, 2u * 512u) << "a shared block is allocated once";
  EXPECT_EQ(s.bytes_live, 5u * 128u) << "shared tokens are live once";

  ASSERT_TRUE(cache->append_slots(*f, 1).ok());  // f copies the partial block
  s = cache->stats();
  EXPECT_EQ(s.blocks_used, 3);
  EXPECT_EQ(s.bytes_live, (4u + 1u + 2u) * 128u);
  // The waste of paging: bytes allocated but not live, at most a block per table.
  EXPECT_EQ(s.bytes_allocated - s.bytes_live, (12u - 7u) * 128u);
}

TEST(PagedKvCache, F16PoolsHoldTwiceTheTokensAndKeepEveryRowThroughForks) {
  // The same 10 blocks' worth of f32 memory holds 20 blocks of f16.
  auto cache = std::make_unique<PagedKvCache>(params(4, 10 * 4 * 128, 8, "f16"));
  ASSERT_TRUE(cache->configure(small_spec()).ok());
  EXPECT_EQ(cache->layer(0).dtype, DType::f16);
  EXPECT_NE(cache->layer(0).k_f16(), nullptr);
  EXPECT_EQ(cache->layer(0).k_f32(), nullptr) << "the f32 accessor refuses an f16 pool";
  MemoryStats empty = cache->stats();
  EXPECT_EQ(empty.blocks_total, 20);
  EXPECT_EQ(empty.bytes_reserved, 20u * 256u);

  auto a = cache->create_sequence();
  ASSERT_TRUE(a.ok());
  append_tagged(*cache, *a, 6, 10.0f);
  auto f = cache->fork(*a);
  ASSERT_TRUE(f.ok());
  append_tagged(*cache, *f, 3, 500.0f);  // copy-on-write of the half-full block, in f16
  for (int p = 0; p < 6; ++p) EXPECT_TRUE(token_is(*cache, *f, p, 10.0f + p)) << p;
  for (int p = 0; p < 3; ++p) EXPECT_TRUE(token_is(*cache, *f, 6 + p, 500.0f + p)) << p;
  EXPECT_EQ(cache->stats().bytes_live, (4u + 2u + 5u) * 64u) << "64 bytes per f16 token; the shared block counts once";

  EXPECT_THROW(PagedKvCache(params(4, 4096, 8, "f8")), std::invalid_argument);
}

TEST(PagedKvCache, ConfigureRejectsWhatCannotWork) {
  {
    // 1 KiB cannot hold one block of 16 tokens x 128 bytes.
    PagedKvCache cache(params(16, 1024));
    const Status st = cache.configure(small_spec());
    EXPECT_EQ(st.code(), StatusCode::invalid_argument);
    EXPECT_NE(st.message().find("memory 1KiB cannot hold one block of 16 tokens (2048 bytes"), std::string::npos)
        << st.message();
  }
  {
    PagedKvCache exactly_one(params(16, 2048));
    ASSERT_TRUE(exactly_one.configure(small_spec()).ok());
    EXPECT_EQ(exactly_one.stats().blocks_total, 1);
    PagedKvCache odd(params(16, 2048 * 3 + 100));
    ASSERT_TRUE(odd.configure(small_spec()).ok());
    EXPECT_EQ(odd.stats().blocks_total, 3) << "a partial block's worth of memory is not used";
    EXPECT_EQ(odd.stats().bytes_reserved, 3u * 2048u);
  }
  {
    const test::OwnedStateSpec huge = test::attention_spec(1 << 16, 1 << 30, 1 << 30, 64);
    PagedKvCache cache(params(4096, 1 << 20));
    EXPECT_EQ(cache.configure(huge.spec()).code(), StatusCode::invalid_argument) << "overflowing sizes are refused";
  }
  {
    const test::OwnedStateSpec no_kv = test::attention_spec(kLayers, 2, 0, 64);
    PagedKvCache cache(params(16, 1 << 20));
    EXPECT_EQ(cache.configure(no_kv.spec()).code(), StatusCode::invalid_argument);
  }
  {
    PagedKvCache cache(params(16, 1 << 20));
    EXPECT_EQ(cache.create_sequence().status().code(), StatusCode::invalid_argument) << "before configure";
    EXPECT_EQ(cache.append_slots(0, 1).code(), StatusCode::invalid_argument);
    EXPECT_EQ(cache.layer(0).k, nullptr);
    EXPECT_EQ(cache.stats().blocks_total, 0);
    ASSERT_TRUE(cache.configure(small_spec()).ok());
    EXPECT_EQ(cache.configure(small_spec()).code(), StatusCode::invalid_argument) << "twice";
  }
}

TEST(PagedKvCache, ContextAndPoolLimitsAreReportedDistinctly) {
  auto cache = configured(4, 10);  // 40 slots; the model's max_context is 64
  auto a = cache->create_sequence();
  ASSERT_TRUE(a.ok());
  const Status full = cache->append_slots(*a, 41);
  EXPECT_EQ(full.code(), StatusCode::out_of_memory) << "the pool may free up later: " << full.message();
  EXPECT_EQ(cache->length(*a), 0);
  const Status past_context = cache->append_slots(*a, 65);
  EXPECT_EQ(past_context.code(), StatusCode::invalid_argument) << past_context.message();
}

TEST(PagedKvCache, ConstructorRejectsValuesTheCoreWouldHaveRefused) {
  std::string error;
  EXPECT_EQ(make_plugin<PagedKvCache>(params(0, 1 << 20), &error), nullptr);
  EXPECT_NE(error.find("block_size"), std::string::npos) << error;
  EXPECT_EQ(make_plugin<PagedKvCache>(params(4097, 1 << 20), &error), nullptr);
  EXPECT_NE(error.find("block_size"), std::string::npos) << error;
  EXPECT_EQ(make_plugin<PagedKvCache>(params(16, 0), &error), nullptr);
  EXPECT_NE(error.find("memory"), std::string::npos) << error;
  EXPECT_EQ(make_plugin<PagedKvCache>(params(16, 1 << 20, 0), &error), nullptr);
  EXPECT_NE(error.find("max_sequences"), std::string::npos) << error;
}

// ---- the memory contract beyond K/V (tests/plugins/memory_conformance.hpp)

test::MakeMemory maker(int64_t memory, int64_t max_sequences, int64_t checkpoints = 0, int64_t snapshots = 0,
                       int64_t interval = 256) {
  return [=](const SequenceStateSpec& spec) -> std::unique_ptr<SequenceMemory> {
    ParamValues p = params(4, memory, max_sequences);
    p.set("checkpoints", checkpoints);
    p.set("prefix_snapshots", snapshots);
    p.set("snapshot_interval", interval);
    auto cache = std::make_unique<PagedKvCache>(p);
    const Status st = cache->configure(spec);
    EXPECT_TRUE(st.ok()) << st.message();
    return st.ok() ? std::move(cache) : nullptr;
  };
}

TEST(PagedKvCache, CheckpointsOfAnAttentionModel) { test::expect_attention_checkpoints(maker(1 << 20, 8)); }
// 40 blocks of 4 tokens: one sequence can be as long as the context (64).
TEST(PagedKvCache, Admission) { test::expect_admission(maker(40 * 4 * 128, 8), 160); }
TEST(PagedKvCache, RecurrentStates) { test::expect_recurrent_states(maker(1 << 20, 8)); }
TEST(PagedKvCache, RecurrentStateSlotsRunOutCleanly) {
  test::expect_state_slots_run_out_cleanly(maker(1 << 20, 3, 2), 3, 2);
  test::expect_state_slots_run_out_cleanly(maker(1 << 20, 3, 2, 4), 3, 2);  // the snapshots' slots are their own
}
TEST(PagedKvCache, StatePrefixCache) { test::expect_state_prefix_cache(maker(1 << 20, 8, 0, 2, 4)); }

TEST(PagedKvCache, RecurrentStatesShareTheMemoryBudget) {
  // 2 layers x (6 + 10) floats = 128 bytes a state. All of 1 KiB goes to
  // states when the model has no attention layer: 8 slots, capped at
  // max_sequences + checkpoints.
  const test::OwnedStateSpec owned = test::recurrent_spec(2, 6, 10, 32);
  PagedKvCache small(params(4, 1024, 100));
  ASSERT_TRUE(small.configure(owned.spec()).ok());
  EXPECT_EQ(small.stats().states_total, 8);
  EXPECT_EQ(small.stats().blocks_total, 0);
  PagedKvCache capped(params(4, 1 << 20, 2));
  ASSERT_TRUE(capped.configure(owned.spec()).ok());
  EXPECT_EQ(capped.stats().states_total, 4) << "2 sequences and 2 checkpoints";
  EXPECT_EQ(small.prefix_granularity(), 0) << "snapshots get only slots beyond the sequences' and checkpoints'";
  EXPECT_EQ(capped.prefix_granularity(), 256) << "8 snapshots beside them";
  PagedKvCache tiny(params(4, 100, 2));
  EXPECT_EQ(tiny.configure(owned.spec()).code(), StatusCode::invalid_argument) << "not even one state fits";
  // A hybrid gives states half the memory, K/V blocks the rest.
  const test::OwnedStateSpec hybrid = test::hybrid_spec();
  PagedKvCache both(params(4, 4096, 100));
  ASSERT_TRUE(both.configure(hybrid.spec()).ok());
  EXPECT_EQ(both.stats().states_total, 2048 / 128);
  EXPECT_EQ(both.stats().blocks_total, 2048 / (4 * 2 * 2 * 4 * 4));
}

TEST(PagedKvCache, BuiltLibraryLoadsAndMakesAWorkingCache) {
  test::LoadedLibrary loaded = test::load_built_plugin("libtessera_kvcache_paged.so");
  ASSERT_NE(loaded.entry, nullptr);
  const PluginInfo& info = test::expect_single_plugin(loaded.entry, PluginFamily::kvcache, "paged");
  std::string error;
  std::unique_ptr<PluginObject> object(info.create(params(8, 1 << 20), &error));
  ASSERT_NE(object, nullptr) << error;
  auto* cache = static_cast<SequenceMemory*>(object.get());
  ASSERT_TRUE(cache->configure(small_spec()).ok());
  auto seq = cache->create_sequence();
  ASSERT_TRUE(seq.ok());
  ASSERT_TRUE(cache->append_slots(*seq, 20).ok());
  EXPECT_EQ(cache->block_table(*seq).size(), 3u);
  cache->release(*seq);
  EXPECT_EQ(cache->stats().blocks_used, 0);
}

}  // namespace
}  // namespace tessera::plugins
