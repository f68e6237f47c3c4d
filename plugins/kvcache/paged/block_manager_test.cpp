// BlockManager semantics without storage: growth, fork and copy-on-write,
// truncate, release, out-of-memory, limits and the prefix cache.
#include <gtest/gtest.h>

#include <vector>

#include "manager_harness_testing.hpp"

namespace tessera::plugins::paged {
namespace {

using test::iota_tokens;
using test::ManagedBlocks;
using Tokens = std::vector<int32_t>;

SeqId make_seq(ManagedBlocks& m, const Tokens& tokens = {}) {
  auto id = m.manager->create_sequence();
  EXPECT_TRUE(id.ok()) << id.status().message();
  if (!tokens.empty()) {
    EXPECT_TRUE(m.append(*id, tokens).ok());
  }
  return *id;
}

Tokens table_of(ManagedBlocks& m, SeqId seq) {
  const auto t = m.manager->block_table(seq);
  return Tokens(t.begin(), t.end());
}

Tokens concat(Tokens a, const Tokens& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(BlockManager, TablesGrowOneBlockPerBlockSizeTokens) {
  ManagedBlocks m(8, 4);
  const SeqId a = make_seq(m);
  EXPECT_TRUE(m.manager->block_table(a).empty());
  ASSERT_TRUE(m.append(a, iota_tokens(0, 3)).ok());
  EXPECT_EQ(m.manager->block_table(a).size(), 1u);
  ASSERT_TRUE(m.append(a, iota_tokens(3, 5)).ok());
  EXPECT_EQ(m.manager->block_table(a).size(), 2u) << "8 tokens fill two blocks exactly";
  ASSERT_TRUE(m.append(a, iota_tokens(8, 1)).ok());
  EXPECT_EQ(m.manager->block_table(a).size(), 3u);
  EXPECT_EQ(m.manager->length(a), 9);
  EXPECT_EQ(m.read(a), iota_tokens(0, 9));
  EXPECT_EQ(m.manager->pool().used_count(), 3);
  EXPECT_TRUE(m.manager->append_slots(a, 0).ok());
  EXPECT_EQ(m.manager->append_slots(a, -1).code(), StatusCode::invalid_argument);
}

TEST(BlockManager, ForkSharesBlocksAndCopiesAPartialLastBlockBeforeWritingIt) {
  ManagedBlocks m(8, 4);
  const SeqId a = make_seq(m, iota_tokens(0, 6));  // blocks: [0..3] full, [4, 5] partial
  const Tokens a_table = table_of(m, a);
  auto f = m.manager->fork(a);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(table_of(m, *f), a_table);
  EXPECT_EQ(m.manager->length(*f), 6);
  for (int32_t b : a_table) EXPECT_EQ(m.manager->pool().ref_count(b), 2);
  EXPECT_EQ(m.manager->pool().used_count(), 2) << "a fork allocates nothing";

  // The fork writes into the shared partial block: it gets its own copy first.
  ASSERT_TRUE(m.append(*f, {100}).ok());
  ASSERT_EQ(m.copies.size(), 1u);
  EXPECT_EQ(m.copies[0].src, a_table[1]);
  EXPECT_EQ(m.copies[0].rows, 2) << "only the filled rows are copied";
  const Tokens f_table = table_of(m, *f);
  EXPECT_EQ(f_table[0], a_table[0]) << "full blocks stay shared";
  EXPECT_NE(f_table[1], a_table[1]);
  EXPECT_EQ(m.manager->pool().ref_count(a_table[1]), 1);
  EXPECT_EQ(m.manager->pool().ref_count(a_table[0]), 2);

  // The source's partial block is its own again: written in place, no copy.
  ASSERT_TRUE(m.append(a, {200}).ok());
  EXPECT_EQ(m.copies.size(), 1u);
  EXPECT_EQ(table_of(m, a), a_table);
  EXPECT_EQ(m.read(a), concat(iota_tokens(0, 6), {200}));
  EXPECT_EQ(m.read(*f), concat(iota_tokens(0, 6), {100}));
}

TEST(BlockManager, ForkAtABlockBoundaryNeverCopies) {
  ManagedBlocks m(8, 4);
  const SeqId a = make_seq(m, iota_tokens(0, 8));
  auto f = m.manager->fork(a);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE(m.append(*f, {50, 51}).ok());
  ASSERT_TRUE(m.append(a, {60}).ok());
  EXPECT_TRUE(m.copies.empty());
  EXPECT_EQ(m.read(a), concat(iota_tokens(0, 8), {60}));
  EXPECT_EQ(m.read(*f), concat(iota_tokens(0, 8), {50, 51}));
  EXPECT_NE(table_of(m, a)[2], table_of(m, *f)[2]);
}

TEST(BlockManager, TruncateDropsWholeBlocksPastTheNewLength) {
  ManagedBlocks m(8, 4);
  const SeqId a = make_seq(m, iota_tokens(0, 10));  // 3 blocks
  auto f = m.manager->fork(a);
  ASSERT_TRUE(f.ok());
  const Tokens table = table_of(m, a);
  ASSERT_TRUE(m.manager->truncate(a, 5).ok());
  EXPECT_EQ(m.manager->length(a), 5);
  EXPECT_EQ(table_of(m, a), Tokens(table.begin(), table.begin() + 2));
  EXPECT_EQ(m.manager->pool().ref_count(table[2]), 1) << "the fork still holds the dropped block";
  ASSERT_TRUE(m.manager->truncate(*f, 4).ok());
  EXPECT_EQ(m.manager->pool().ref_count(table[2]), 0);
  EXPECT_EQ(m.manager->pool().ref_count(table[1]), 1);
  EXPECT_EQ(m.manager->pool().used_count(), 2);
  // Writing after a rollback into a block the fork no longer holds: no copy.
  ASSERT_TRUE(m.append(a, {77}).ok());
  EXPECT_TRUE(m.copies.empty());
  EXPECT_EQ(m.read(a), concat(iota_tokens(0, 5), {77}));
  EXPECT_EQ(m.read(*f), iota_tokens(0, 4));

  EXPECT_EQ(m.manager->truncate(a, 7).code(), StatusCode::invalid_argument) << "truncate never grows";
  EXPECT_EQ(m.manager->truncate(a, -1).code(), StatusCode::invalid_argument);
  ASSERT_TRUE(m.manager->truncate(a, 0).ok());
  EXPECT_TRUE(m.manager->block_table(a).empty());
}

TEST(BlockManager, ReleaseReturnsEveryBlockAndForgetsTheId) {
  ManagedBlocks m(8, 4);
  const SeqId a = make_seq(m, iota_tokens(0, 9));
  auto f = m.manager->fork(a);
  ASSERT_TRUE(f.ok());
  m.manager->release(a);
  EXPECT_EQ(m.manager->pool().used_count(), 3) << "the fork keeps them";
  EXPECT_EQ(m.manager->append_slots(a, 1).code(), StatusCode::not_found);
  m.manager->release(a);  // twice: harmless
  m.manager->release(12345);  // unknown: harmless
  m.manager->release(*f);
  EXPECT_EQ(m.manager->pool().used_count(), 0);
  EXPECT_EQ(m.manager->pool().free_count(), 8);
  const SeqId b = make_seq(m);
  EXPECT_NE(b, a) << "ids are not reused right away";
  EXPECT_NE(b, *f);
}

TEST(BlockManager, OutOfMemoryLeavesTheSequenceAsItWas) {
  ManagedBlocks m(3, 4);
  const SeqId a = make_seq(m, iota_tokens(0, 10));  // 3 blocks, 2 free rows left
  const Tokens table = table_of(m, a);
  ASSERT_TRUE(m.append(a, {10, 11}).ok()) << "the last block's free rows need no new block";
  const Status st = m.manager->append_slots(a, 1);
  EXPECT_EQ(st.code(), StatusCode::out_of_memory);
  EXPECT_NE(st.message().find("0 of 3 are free"), std::string::npos) << st.message();
  EXPECT_EQ(m.manager->length(a), 12);
  EXPECT_EQ(table_of(m, a), table);

}

TEST(BlockManager, CopyOnWriteNeedsAFreeBlockTooAndFailsCleanlyWithout) {
  ManagedBlocks m(3, 4);
  const SeqId a = make_seq(m, iota_tokens(0, 6));  // 2 blocks, the second half full
  auto f = m.manager->fork(a);
  ASSERT_TRUE(f.ok());
  const SeqId g = make_seq(m, {9, 9, 9, 9});  // takes the last free block
  ASSERT_EQ(m.manager->pool().free_count(), 0);
  const Tokens f_table = table_of(m, *f);
  EXPECT_EQ(m.manager->append_slots(*f, 1).code(), StatusCode::out_of_memory);
  EXPECT_TRUE(m.copies.empty()) << "nothing was copied";
  EXPECT_EQ(table_of(m, *f), f_table);
  EXPECT_EQ(m.manager->length(*f), 6);

  m.manager->release(g);
  ASSERT_TRUE(m.append(*f, {99, 98}).ok());
  EXPECT_EQ(m.copies.size(), 1u);
  EXPECT_EQ(m.read(*f), concat(iota_tokens(0, 6), {99, 98}));
  EXPECT_EQ(m.read(a), iota_tokens(0, 6));
}

TEST(BlockManager, SequenceAndContextLimitsAreEnforced) {
  ManagedBlocks m(16, 4, /*max_sequences=*/2, /*max_context=*/10);
  const SeqId a = make_seq(m);
  const SeqId b = make_seq(m);
  auto c = m.manager->create_sequence();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::out_of_memory);
  EXPECT_NE(c.status().message().find("max_sequences"), std::string::npos);
  EXPECT_EQ(m.manager->fork(a).status().code(), StatusCode::out_of_memory);
  m.manager->release(b);
  EXPECT_TRUE(m.manager->fork(a).ok());

  ASSERT_TRUE(m.manager->append_slots(a, 10).ok());
  const Status st = m.manager->append_slots(a, 1);
  EXPECT_EQ(st.code(), StatusCode::invalid_argument) << "no amount of waiting makes room past max_context";
  EXPECT_NE(st.message().find("max_context 10"), std::string::npos) << st.message();
  EXPECT_EQ(m.manager->fork(777).status().code(), StatusCode::not_found);
  EXPECT_EQ(m.manager->truncate(777, 0).code(), StatusCode::not_found);
  EXPECT_EQ(m.manager->length(777), 0);
}

TEST(BlockManager, LiveTokensCountSharedBlocksOnce) {
  ManagedBlocks m(8, 4);
  const SeqId a = make_seq(m, iota_tokens(0, 6));
  auto f = m.manager->fork(a);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(m.manager->live_tokens(), 6);
  ASSERT_TRUE(m.append(*f, {1}).ok());  // copy of the partial block: 4 shared + 2 + 3
  EXPECT_EQ(m.manager->live_tokens(), 9);
  ASSERT_TRUE(m.manager->truncate(a, 2).ok());  // a's first block shared with f, which fills it
  EXPECT_EQ(m.manager->live_tokens(), 7);
}

// ---- prefix cache ----

TEST(BlockManager, RecordedFullBlocksServeALaterPromptButNeverItsLastToken) {
  ManagedBlocks m(16, 4);
  const Tokens prompt = iota_tokens(100, 10);
  const SeqId a = make_seq(m, prompt);
  m.manager->record_tokens(a, prompt);
  EXPECT_EQ(m.manager->pool().cached_count(), 2) << "two full blocks; the partial one is not published";

  const SeqId b = make_seq(m);
  EXPECT_EQ(m.manager->reuse_prefix(b, prompt), 8);
  EXPECT_EQ(m.manager->length(b), 8);
  const Tokens a_table = table_of(m, a);
  EXPECT_EQ(table_of(m, b), Tokens(a_table.begin(), a_table.begin() + 2));
  EXPECT_EQ(m.read(b), iota_tokens(100, 8));
  EXPECT_EQ(m.manager->pool().ref_count(a_table[0]), 2);

  // Exactly 8 tokens: the second block holds the last token, so only one block.
  const SeqId c = make_seq(m);
  EXPECT_EQ(m.manager->reuse_prefix(c, iota_tokens(100, 8)), 4);
  const SeqId d = make_seq(m);
  EXPECT_EQ(m.manager->reuse_prefix(d, iota_tokens(100, 9)), 8);
  EXPECT_EQ(m.manager->prefix_hit_tokens(), 20);

  // The reusing sequence then appends the rest of its prompt into new blocks.
  ASSERT_TRUE(m.append(d, {108}).ok());
  EXPECT_EQ(m.read(d), iota_tokens(100, 9));
  EXPECT_TRUE(m.copies.empty());
}

TEST(BlockManager, PrefixMissesStopAtTheFirstDifferingBlock) {
  ManagedBlocks m(16, 4);
  const Tokens prompt = iota_tokens(0, 13);
  const SeqId a = make_seq(m, prompt);
  m.manager->record_tokens(a, prompt);

  Tokens other_start = prompt;
  other_start[0] = 999;
  EXPECT_EQ(m.manager->reuse_prefix(make_seq(m), other_start), 0);
  Tokens other_middle = prompt;
  other_middle[6] = 999;
  EXPECT_EQ(m.manager->reuse_prefix(make_seq(m), other_middle), 4);
  EXPECT_EQ(m.manager->reuse_prefix(make_seq(m), Tokens{0}), 0);
  EXPECT_EQ(m.manager->reuse_prefix(make_seq(m), Tokens{}), 0);

  // Only a fresh sequence reuses: one that holds tokens is left alone.
  const SeqId busy = make_seq(m, {5});
  EXPECT_EQ(m.manager->reuse_prefix(busy, prompt), 0);
  EXPECT_EQ(m.manager->length(busy), 1);
}

TEST(BlockManager, KeysAreChainedSoABlockMatchesOnlyAfterTheSameParent) {
  ManagedBlocks m(16, 4);
  const Tokens first = {1, 1, 1, 1, 5, 5, 5, 5, 9};
  const Tokens second = {2, 2, 2, 2, 7, 7, 7, 7, 9};
  const SeqId a = make_seq(m, first);
  const SeqId b = make_seq(m, second);
  m.manager->record_tokens(a, first);
  m.manager->record_tokens(b, second);
  // Block "2222" is cached, and so is "5555", but only after "1111".
  const Tokens mixed = {2, 2, 2, 2, 5, 5, 5, 5, 9};
  EXPECT_EQ(m.manager->reuse_prefix(make_seq(m), mixed), 4);
}

TEST(BlockManager, RecordingIsIncrementalAndIgnoresSlotsThatDoNotExist) {
  ManagedBlocks m(16, 4);
  const Tokens prompt = iota_tokens(0, 12);
  const SeqId a = make_seq(m, Tokens(prompt.begin(), prompt.begin() + 6));
  m.manager->record_tokens(a, prompt);  // more tokens than slots: only the first 6 count
  EXPECT_EQ(m.manager->pool().cached_count(), 1);
  ASSERT_TRUE(m.append(a, Tokens(prompt.begin() + 6, prompt.end())).ok());
  m.manager->record_tokens(a, prompt);
  EXPECT_EQ(m.manager->pool().cached_count(), 3);
  m.manager->record_tokens(a, prompt);  // again: nothing new
  EXPECT_EQ(m.manager->pool().cached_count(), 3);
  EXPECT_EQ(m.manager->reuse_prefix(make_seq(m), concat(prompt, {1})), 12);

  // A second sequence computing the same content: the first copy stays the cached one.
  const SeqId twin = make_seq(m, prompt);
  m.manager->record_tokens(twin, prompt);
  EXPECT_EQ(m.manager->pool().cached_count(), 3);
  EXPECT_FALSE(m.manager->pool().has_key(table_of(m, twin)[0]));
}

TEST(BlockManager, CachedBlocksOutliveTheirSequenceAndTheHeadOfAPrefixOutlivesItsTail) {
  ManagedBlocks m(4, 2);
  const Tokens prompt = {1, 2, 3, 4, 5};  // blocks {1,2} {3,4} {5}
  const SeqId a = make_seq(m, prompt);
  m.manager->record_tokens(a, prompt);
  const Tokens a_table = table_of(m, a);
  m.manager->release(a);
  EXPECT_EQ(m.manager->pool().cached_count(), 2);

  // Keyless blocks are handed out first: the never-used block and a's partial one.
  const SeqId filler = make_seq(m, {7, 7, 7, 7});
  EXPECT_EQ(m.manager->pool().cached_count(), 2);
  // The next block evicts the older cached block: a's tail, freed before its head.
  ASSERT_TRUE(m.append(filler, {8}).ok());
  EXPECT_EQ(m.manager->pool().cached_count(), 1);
  EXPECT_TRUE(m.manager->pool().has_key(a_table[0]));
  EXPECT_FALSE(m.manager->pool().has_key(a_table[1]));

  const SeqId b = make_seq(m);
  EXPECT_EQ(m.manager->reuse_prefix(b, prompt), 2) << "the head block is still cached";
  EXPECT_EQ(m.read(b), (Tokens{1, 2}));
}

TEST(BlockManager, LeastRecentlyReleasedPrefixIsEvictedFirst) {
  ManagedBlocks m(3, 2);
  const Tokens p = {1, 1, 0}, q = {2, 2, 0};
  const SeqId a = make_seq(m, p);
  m.manager->record_tokens(a, p);
  m.manager->release(a);  // p's block freed first
  const SeqId b = make_seq(m, q);
  m.manager->record_tokens(b, q);
  m.manager->release(b);
  // One keyless free block, then p's, then q's: two allocations evict p, not q.
  make_seq(m, {9, 9, 9});
  EXPECT_EQ(m.manager->reuse_prefix(make_seq(m), p), 0);
  EXPECT_EQ(m.manager->reuse_prefix(make_seq(m), q), 2);
}

TEST(BlockManager, ABlockWrittenAfterATruncateLosesItsKeyUnlessItIsShared) {
  ManagedBlocks m(16, 4);
  const Tokens prompt = iota_tokens(0, 8);
  const SeqId a = make_seq(m, prompt);
  m.manager->record_tokens(a, prompt);
  const int32_t second = table_of(m, a)[1];
  ASSERT_TRUE(m.manager->truncate(a, 6).ok());
  EXPECT_TRUE(m.manager->pool().has_key(second)) << "its rows are intact until written";

  // Shared at write time: the writer copies, the cached block stays as it was.
  const SeqId b = make_seq(m);
  EXPECT_EQ(m.manager->reuse_prefix(b, concat(prompt, {8})), 8);
  ASSERT_TRUE(m.append(a, {60, 61}).ok());
  EXPECT_EQ(m.copies.size(), 1u);
  EXPECT_TRUE(m.manager->pool().has_key(second));
  EXPECT_EQ(m.read(b), prompt);
  EXPECT_EQ(m.read(a), concat(iota_tokens(0, 6), {60, 61}));

  // Held by one table at write time: written in place, so the key goes.
  ASSERT_TRUE(m.manager->truncate(b, 5).ok());
  ASSERT_TRUE(m.append(b, {70}).ok());
  EXPECT_FALSE(m.manager->pool().has_key(second));
  EXPECT_EQ(m.manager->reuse_prefix(make_seq(m), concat(prompt, {8})), 4);
}

}  // namespace
}  // namespace tessera::plugins::paged
