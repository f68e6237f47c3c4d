// BlockPool: reference counts, the free list's eviction order, and keys.
#include <gtest/gtest.h>

#include <vector>

#include "block_pool.hpp"

namespace tessera::plugins::paged {
namespace {

BlockKey key_of(int32_t n) {
  const std::vector<int32_t> tokens{n};
  return chain_block_key(std::nullopt, tokens);
}

TEST(BlockPool, HandsOutEveryBlockOnceThenNone) {
  BlockPool pool(3);
  EXPECT_EQ(pool.total(), 3);
  EXPECT_EQ(pool.free_count(), 3);
  EXPECT_EQ(pool.allocate(), 0);
  EXPECT_EQ(pool.allocate(), 1);
  EXPECT_EQ(pool.allocate(), 2);
  EXPECT_EQ(pool.allocate(), BlockPool::kNone);
  EXPECT_EQ(pool.used_count(), 3);
  EXPECT_EQ(pool.ref_count(1), 1);
  EXPECT_TRUE(pool.free_list().empty());
}

TEST(BlockPool, ReferenceCountsDecideWhenABlockIsFree) {
  BlockPool pool(2);
  const int32_t b = pool.allocate();
  pool.retain(b);
  EXPECT_EQ(pool.ref_count(b), 2);
  pool.release(b);
  EXPECT_EQ(pool.free_count(), 1) << "still held once";
  pool.release(b);
  EXPECT_EQ(pool.free_count(), 2);
  EXPECT_EQ(pool.ref_count(b), 0);
  EXPECT_THROW(pool.release(b), std::logic_error) << "a double free is a bug, reported, not absorbed";
  EXPECT_EQ(pool.free_count(), 2) << "and it did not corrupt the free list";
}

TEST(BlockPool, CachedBlocksAreEvictedLeastRecentlyUsedFirstAndPlainBlocksBeforeThem) {
  BlockPool pool(4);
  const int32_t a = pool.allocate(), b = pool.allocate(), c = pool.allocate(), d = pool.allocate();
  ASSERT_TRUE(pool.publish(a, key_of(1)));
  ASSERT_TRUE(pool.publish(b, key_of(2)));
  ASSERT_TRUE(pool.publish(c, key_of(3)));
  // Freed in the order b, a, d, c: the keyless d goes first, then b, a, c.
  pool.release(b);
  pool.release(a);
  pool.release(d);
  pool.release(c);
  EXPECT_EQ(pool.free_list(), (std::vector<int32_t>{d, b, a, c}));
  EXPECT_EQ(pool.cached_count(), 3);

  EXPECT_EQ(pool.allocate(), d);
  EXPECT_EQ(pool.find(key_of(2)), b) << "nothing cached was evicted yet";
  EXPECT_EQ(pool.allocate(), b);
  EXPECT_EQ(pool.find(key_of(2)), BlockPool::kNone) << "evicting a block drops its key";
  EXPECT_FALSE(pool.has_key(b));
  EXPECT_EQ(pool.find(key_of(1)), a);
  EXPECT_EQ(pool.cached_count(), 2);
}

TEST(BlockPool, ReusingACachedFreeBlockTakesItOffTheFreeList) {
  BlockPool pool(3);
  const int32_t a = pool.allocate();
  ASSERT_TRUE(pool.publish(a, key_of(7)));
  pool.release(a);
  ASSERT_EQ(pool.free_count(), 3);
  pool.retain(pool.find(key_of(7)));  // a prefix-cache hit
  EXPECT_EQ(pool.ref_count(a), 1);
  EXPECT_EQ(pool.free_count(), 2);
  EXPECT_NE(pool.allocate(), a);
  EXPECT_NE(pool.allocate(), a);
  EXPECT_EQ(pool.allocate(), BlockPool::kNone);
  EXPECT_EQ(pool.find(key_of(7)), a) << "held blocks are never evicted";
}

TEST(BlockPool, ReleasingTheSameCachedBlockAgainMakesItMostRecent) {
  BlockPool pool(3);
  const int32_t a = pool.allocate(), b = pool.allocate();
  ASSERT_TRUE(pool.publish(a, key_of(1)));
  ASSERT_TRUE(pool.publish(b, key_of(2)));
  pool.release(a);
  pool.release(b);
  pool.retain(a);  // used again...
  pool.release(a);  // ...and freed again: now newer than b
  EXPECT_EQ(pool.free_list(), (std::vector<int32_t>{2, b, a}));
}

TEST(BlockPool, OneKeyPerBlockAndOneBlockPerKey) {
  BlockPool pool(2);
  const int32_t a = pool.allocate(), b = pool.allocate();
  EXPECT_TRUE(pool.publish(a, key_of(1)));
  EXPECT_FALSE(pool.publish(a, key_of(2))) << "a block already keyed keeps its key";
  EXPECT_FALSE(pool.publish(b, key_of(1))) << "the same content is cached once";
  EXPECT_EQ(pool.find(key_of(1)), a);
  EXPECT_EQ(pool.find(key_of(2)), BlockPool::kNone);
  pool.forget(a);
  EXPECT_EQ(pool.find(key_of(1)), BlockPool::kNone);
  EXPECT_TRUE(pool.publish(b, key_of(1)));
  EXPECT_EQ(pool.find(key_of(1)), b);
}

}  // namespace
}  // namespace tessera::plugins::paged
