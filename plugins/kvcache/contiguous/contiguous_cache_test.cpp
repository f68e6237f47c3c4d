// Unit tests of the contiguous KV cache: lifecycle, data layout, fork copies,
// stats that report the up-front reservation, and every error path.
#include <gtest/gtest.h>

#include <memory>

#include "contiguous_cache.hpp"
#include "kv_tagged_rows.hpp"
#include "memory_conformance.hpp"
#include "plugin_loading.hpp"
#include "plugin_test_support.hpp"
#include "state_specs.hpp"

namespace tessera::plugins {
const PluginLibrary* contiguous_kvcache_entry();
}

namespace tessera::plugins {
namespace {

// 2 layers, 2 KV heads of 4 floats: 2 * 2 * 2 * 4 * 4 = 128 bytes per token.
SequenceStateSpec small_spec() {
  static const test::OwnedStateSpec owned = test::attention_spec(2, 2, 4, 8);
  return owned.spec();
}

ParamValues params(int64_t max_sequences, int64_t max_context = 0, int64_t memory = 0, const char* dtype = "f32") {
  ParamValues p;
  p.set("max_sequences", max_sequences);
  p.set("max_context", max_context);
  p.set("memory", memory);
  p.set("dtype", std::string(dtype));
  return p;
}

std::unique_ptr<ContiguousKvCache> configured(int64_t max_sequences, int64_t max_context = 0) {
  auto cache = std::make_unique<ContiguousKvCache>(params(max_sequences, max_context));
  EXPECT_TRUE(cache->configure(small_spec()).ok());
  return cache;
}

void write_token(ContiguousKvCache& cache, SeqId seq, int64_t pos, float tag) {
  test::write_tagged_token(cache, 2, seq, pos, tag);
}

bool token_is(ContiguousKvCache& cache, SeqId seq, int64_t pos, float tag) {
  return test::token_has_tag(cache, 2, seq, pos, tag);
}

TEST(ContiguousKvCache, EntryDescribesThePluginAndItsFactoryWorks) {
  const PluginInfo& info =
      test::expect_single_plugin(contiguous_kvcache_entry(), PluginFamily::kvcache, "contiguous");
  std::string error;
  std::unique_ptr<PluginObject> object(info.create(test::default_params(info), &error));
  ASSERT_NE(object, nullptr) << error;
  auto* cache = static_cast<SequenceMemory*>(object.get());
  ASSERT_TRUE(cache->configure(small_spec()).ok());
  // Defaults: one sequence, the model's whole context.
  EXPECT_EQ(cache->layer(0).block_size, 8);
  EXPECT_EQ(cache->stats().blocks_total, 1);
}

TEST(ContiguousKvCache, LayerViewDescribesOneBlockPerSequence) {
  auto cache = configured(3, 6);
  KvLayerView view = cache->layer(1);
  EXPECT_EQ(view.block_size, 6);
  EXPECT_EQ(view.n_kv_head, 2);
  EXPECT_EQ(view.head_dim, 4);
  EXPECT_NE(view.k, nullptr);
  EXPECT_NE(view.v, nullptr);
  EXPECT_NE(view.k, cache->layer(0).k);
  EXPECT_EQ(cache->layer(2).k, nullptr) << "a layer past n_layer has no view";
  EXPECT_EQ(cache->layer(-1).k, nullptr);
}

TEST(ContiguousKvCache, CreateAppendAndBlockTables) {
  auto cache = configured(2);
  auto a = cache->create_sequence();
  auto b = cache->create_sequence();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
  EXPECT_EQ(cache->length(*a), 0);
  ASSERT_TRUE(cache->append_slots(*a, 3).ok());
  ASSERT_TRUE(cache->append_slots(*a, 2).ok());
  ASSERT_TRUE(cache->append_slots(*b, 8).ok());
  EXPECT_EQ(cache->length(*a), 5);
  EXPECT_EQ(cache->length(*b), 8);
  ASSERT_EQ(cache->block_table(*a).size(), 1u);
  ASSERT_EQ(cache->block_table(*b).size(), 1u);
  EXPECT_NE(cache->block_table(*a)[0], cache->block_table(*b)[0]);

  // Writing one sequence never touches the other's block.
  for (int pos = 0; pos < 5; ++pos) write_token(*cache, *a, pos, 1.0f + pos);
  for (int pos = 0; pos < 8; ++pos) write_token(*cache, *b, pos, 50.0f + pos);
  for (int pos = 0; pos < 5; ++pos) EXPECT_TRUE(token_is(*cache, *a, pos, 1.0f + pos));
  for (int pos = 0; pos < 8; ++pos) EXPECT_TRUE(token_is(*cache, *b, pos, 50.0f + pos));
}

TEST(ContiguousKvCache, CreateFailsWithOutOfMemoryWhenEverySlotIsTaken) {
  auto cache = configured(2);
  auto a = cache->create_sequence();
  auto b = cache->create_sequence();
  ASSERT_TRUE(a.ok() && b.ok());
  auto c = cache->create_sequence();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::out_of_memory);
  EXPECT_NE(c.status().message().find("max_sequences"), std::string::npos) << c.status().message();

  cache->release(*a);
  auto d = cache->create_sequence();
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_NE(*d, *a) << "ids are not reused right away, so a stale id is caught";
  EXPECT_EQ(cache->length(*d), 0) << "a new sequence starts empty even in a reused slot";
}

TEST(ContiguousKvCache, AppendPastTheContextIsAClearErrorAndChangesNothing) {
  auto cache = configured(1, 6);
  auto a = cache->create_sequence();
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(cache->append_slots(*a, 4).ok());
  const Status st = cache->append_slots(*a, 3);
  EXPECT_EQ(st.code(), StatusCode::invalid_argument);
  EXPECT_NE(st.message().find("max_context 6"), std::string::npos) << st.message();
  EXPECT_EQ(cache->length(*a), 4);
  EXPECT_TRUE(cache->append_slots(*a, 2).ok()) << "filling the context exactly is allowed";
  EXPECT_EQ(cache->append_slots(*a, -1).code(), StatusCode::invalid_argument);
}

TEST(ContiguousKvCache, ForkCopiesTheDataAndThenBothSequencesDiverge) {
  auto cache = configured(2);
  auto a = cache->create_sequence();
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(cache->append_slots(*a, 3).ok());
  for (int pos = 0; pos < 3; ++pos) write_token(*cache, *a, pos, 10.0f + pos);

  auto f = cache->fork(*a);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(cache->length(*f), 3);
  EXPECT_NE(cache->block_table(*f)[0], cache->block_table(*a)[0]);
  for (int pos = 0; pos < 3; ++pos) EXPECT_TRUE(token_is(*cache, *f, pos, 10.0f + pos));

  // The copy is independent: overwriting the source leaves the fork as it was.
  write_token(*cache, *a, 1, 77.0f);
  EXPECT_TRUE(token_is(*cache, *f, 1, 11.0f));
  ASSERT_TRUE(cache->append_slots(*f, 1).ok());
  EXPECT_EQ(cache->length(*a), 3);

  // No third slot: fork reports out_of_memory.
  auto g = cache->fork(*a);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::out_of_memory);
}

TEST(ContiguousKvCache, TruncateRollsBackAndRejectsGrowth) {
  auto cache = configured(1);
  auto a = cache->create_sequence();
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(cache->append_slots(*a, 6).ok());
  ASSERT_TRUE(cache->truncate(*a, 2).ok());
  EXPECT_EQ(cache->length(*a), 2);
  EXPECT_EQ(cache->truncate(*a, 3).code(), StatusCode::invalid_argument);
  EXPECT_EQ(cache->truncate(*a, -1).code(), StatusCode::invalid_argument);
  ASSERT_TRUE(cache->truncate(*a, 0).ok());
  ASSERT_TRUE(cache->append_slots(*a, 8).ok()) << "the whole context is usable again after a rollback";
}

TEST(ContiguousKvCache, UnknownSequencesAreReportedNotTrusted) {
  auto cache = configured(1);
  EXPECT_EQ(cache->append_slots(42, 1).code(), StatusCode::not_found);
  EXPECT_EQ(cache->truncate(42, 0).code(), StatusCode::not_found);
  EXPECT_EQ(cache->fork(42).status().code(), StatusCode::not_found);
  EXPECT_EQ(cache->length(42), 0);
  EXPECT_TRUE(cache->block_table(42).empty());
  cache->release(42);  // harmless
  auto a = cache->create_sequence();
  ASSERT_TRUE(a.ok());
  cache->release(*a);
  cache->release(*a);  // twice is harmless too
  EXPECT_EQ(cache->append_slots(*a, 1).code(), StatusCode::not_found);
}

TEST(ContiguousKvCache, StatsReportTheWholeBlockAsAllocatedButOnlyTokensAsLive) {
  auto cache = configured(3);  // context 8, 128 bytes per token, block 1024 bytes
  const uint64_t token_bytes = small_spec().kv_bytes_per_token();
  ASSERT_EQ(token_bytes, 128u);
  MemoryStats empty = cache->stats();
  EXPECT_EQ(empty.blocks_total, 3);
  EXPECT_EQ(empty.blocks_used, 0);
  EXPECT_EQ(empty.bytes_allocated, 0u);
  EXPECT_EQ(empty.bytes_live, 0u);
  EXPECT_EQ(empty.bytes_reserved, 3u * 8u * 128u);

  auto a = cache->create_sequence();
  auto b = cache->create_sequence();
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(cache->append_slots(*a, 2).ok());
  ASSERT_TRUE(cache->append_slots(*b, 5).ok());
  MemoryStats s = cache->stats();
  EXPECT_EQ(s.blocks_used, 2);
  EXPECT_EQ(s.bytes_allocated, 2u * 8u * 128u);
  EXPECT_EQ(s.bytes_live, 7u * 128u);
  EXPECT_EQ(s.bytes_reserved, 3u * 8u * 128u);
  EXPECT_EQ(s.prefix_hit_tokens, 0);

  cache->release(*b);
  s = cache->stats();
  EXPECT_EQ(s.blocks_used, 1);
  EXPECT_EQ(s.bytes_allocated, 8u * 128u);
  EXPECT_EQ(s.bytes_live, 2u * 128u);
}

TEST(ContiguousKvCache, F16PoolsHalveTheBytesAndForksCopyThem) {
  auto cache = std::make_unique<ContiguousKvCache>(params(2, 0, 0, "f16"));
  ASSERT_TRUE(cache->configure(small_spec()).ok());
  EXPECT_EQ(cache->layer(0).dtype, DType::f16);
  EXPECT_EQ(cache->layer(1).v_f32(), nullptr);
  EXPECT_EQ(cache->stats().bytes_reserved, 2u * 8u * 64u) << "64 bytes per f16 token";

  auto a = cache->create_sequence();
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(cache->append_slots(*a, 3).ok());
  for (int pos = 0; pos < 3; ++pos) write_token(*cache, *a, pos, 10.0f + pos);
  auto f = cache->fork(*a);
  ASSERT_TRUE(f.ok());
  for (int pos = 0; pos < 3; ++pos) EXPECT_TRUE(token_is(*cache, *f, pos, 10.0f + pos)) << pos;
  EXPECT_EQ(cache->stats().bytes_live, 6u * 64u);

  // A memory cap counts f16 bytes: 2 sequences x 8 tokens x 64 bytes fit in 1 KiB.
  ContiguousKvCache capped(params(2, 0, 1024, "f16"));
  EXPECT_TRUE(capped.configure(small_spec()).ok());
  EXPECT_THROW(ContiguousKvCache(params(1, 0, 0, "bf16")), std::invalid_argument);
}

TEST(ContiguousKvCache, ConfigureRejectsBadSizes) {
  {
    ContiguousKvCache cache(params(1, 16));
    const Status st = cache.configure(small_spec());
    EXPECT_EQ(st.code(), StatusCode::invalid_argument);
    EXPECT_NE(st.message().find("exceeds the model's max_context 8"), std::string::npos) << st.message();
  }
  {
    // 4 sequences x 8 tokens x 128 bytes = 4096 bytes; a 4095-byte cap refuses
    // (a configuration mistake, as with the paged cache).
    ContiguousKvCache refuse(params(4, 0, 4095));
    const Status st = refuse.configure(small_spec());
    EXPECT_EQ(st.code(), StatusCode::invalid_argument);
    EXPECT_NE(st.message().find("4096"), std::string::npos) << st.message();
    ContiguousKvCache fits(params(4, 0, 4096));
    EXPECT_TRUE(fits.configure(small_spec()).ok());
  }
  {
    // Sizes whose product overflows 64 bits are refused before any allocation.
    const test::OwnedStateSpec huge = test::attention_spec(1 << 16, 1 << 14, 1 << 14, 2147483647);
    ContiguousKvCache cache(params(2147483647));
    EXPECT_EQ(cache.configure(huge.spec()).code(), StatusCode::invalid_argument);
  }
  {
    const test::OwnedStateSpec no_kv = test::attention_spec(2, 0, 4, 8);
    ContiguousKvCache cache(params(1));
    EXPECT_EQ(cache.configure(no_kv.spec()).code(), StatusCode::invalid_argument);
  }
  {
    ContiguousKvCache cache(params(1));
    ASSERT_TRUE(cache.configure(small_spec()).ok());
    EXPECT_EQ(cache.configure(small_spec()).code(), StatusCode::invalid_argument);
  }
  {
    ContiguousKvCache cache(params(1));
    EXPECT_EQ(cache.create_sequence().status().code(), StatusCode::invalid_argument) << "before configure";
  }
}

TEST(ContiguousKvCache, ConstructorRejectsValuesTheCoreWouldHaveRefused) {
  std::string error;
  EXPECT_EQ(make_plugin<ContiguousKvCache>(params(0), &error), nullptr);
  EXPECT_NE(error.find("max_sequences"), std::string::npos) << error;
  EXPECT_EQ(make_plugin<ContiguousKvCache>(params(1, -5), &error), nullptr);
  EXPECT_NE(error.find("max_context"), std::string::npos) << error;
}

// ---- the memory contract beyond K/V (tests/plugins/memory_conformance.hpp)

test::MakeMemory maker(int64_t max_sequences, int64_t checkpoints = 0, int64_t snapshots = 0, int64_t interval = 256) {
  return [=](const SequenceStateSpec& spec) -> std::unique_ptr<SequenceMemory> {
    ParamValues p = params(max_sequences);
    p.set("checkpoints", checkpoints);
    p.set("prefix_snapshots", snapshots);
    p.set("snapshot_interval", interval);
    auto cache = std::make_unique<ContiguousKvCache>(p);
    const Status st = cache->configure(spec);
    EXPECT_TRUE(st.ok()) << st.message();
    return st.ok() ? std::move(cache) : nullptr;
  };
}

TEST(ContiguousKvCache, CheckpointsOfAnAttentionModel) { test::expect_attention_checkpoints(maker(2)); }
TEST(ContiguousKvCache, Admission) { test::expect_admission(maker(2), 64); }
TEST(ContiguousKvCache, RecurrentStates) { test::expect_recurrent_states(maker(4)); }
TEST(ContiguousKvCache, RecurrentStateSlotsRunOutCleanly) {
  test::expect_state_slots_run_out_cleanly(maker(3, 2), 3, 2);
  test::expect_state_slots_run_out_cleanly(maker(3, 2, 4), 3, 2);  // the snapshots' slots are their own
}
TEST(ContiguousKvCache, StatePrefixCache) { test::expect_state_prefix_cache(maker(8, 0, 2, 4)); }

TEST(ContiguousKvCache, BuiltLibraryLoadsAndDescribesThePlugin) {
  test::LoadedLibrary loaded = test::load_built_plugin("libtessera_kvcache_contiguous.so");
  ASSERT_NE(loaded.entry, nullptr);
  const PluginInfo& info = test::expect_single_plugin(loaded.entry, PluginFamily::kvcache, "contiguous");
  std::string error;
  std::unique_ptr<PluginObject> object(info.create(test::default_params(info), &error));
  EXPECT_NE(object, nullptr) << error;
}

}  // namespace
}  // namespace tessera::plugins
