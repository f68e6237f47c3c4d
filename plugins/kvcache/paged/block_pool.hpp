// BlockPool: the physical blocks of a paged KV cache as host bookkeeping only.
//
// Every block has a reference count (how many block tables hold it) and may
// carry a prefix-cache key (block_key.hpp) naming the tokens it holds. Blocks
// with no reference sit on a free list kept in eviction order:
//   * a block that still carries a key (a cached prefix) is put at the
//     most-recently-used end when freed, so cached prefixes survive longest;
//   * a block with no key holds nothing anyone can reuse, so it goes to the
//     least-recently-used end and is handed out first.
// allocate() takes the least-recently-used free block; if it carried a key,
// the key is dropped (its content is about to be overwritten).
// retain() on a free cached block (a prefix-cache hit) takes it off the list.
//
// No K/V storage here: the pool is testable without any kernel or memory.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "block_key.hpp"

namespace tessera::plugins::paged {

// The prefix-cache keys are shared with the recurrent state snapshots (kvcache/common).
using memory::BlockKey;
using memory::BlockKeyHash;
using memory::chain_block_key;

class BlockPool {
 public:
  static constexpr int32_t kNone = -1;

  explicit BlockPool(int32_t n_blocks);

  int32_t total() const { return static_cast<int32_t>(refs_.size()); }
  int32_t free_count() const { return free_count_; }
  int32_t used_count() const { return total() - free_count_; }
  int32_t cached_count() const { return static_cast<int32_t>(by_key_.size()); }

  // The least recently used free block with a reference count of 1, or kNone
  // when every block is referenced. Drops the block's key if it had one.
  int32_t allocate();
  // One more reference; a free block (a cached prefix being reused) leaves the free list.
  void retain(int32_t block);
  // One reference fewer; at zero the block joins the free list (see above).
  void release(int32_t block);
  int32_t ref_count(int32_t block) const { return refs_[static_cast<size_t>(block)]; }

  // Publishes `block` under `key`. Refused (false) when the block already has
  // a key or another block already holds this key (one copy per content is enough).
  bool publish(int32_t block, const BlockKey& key);
  // Drops the block's key (its content is about to change).
  void forget(int32_t block);
  // The block published under `key`, or kNone.
  int32_t find(const BlockKey& key) const;
  bool has_key(int32_t block) const { return keys_[static_cast<size_t>(block)].has_value(); }

  // Free blocks from least to most recently used: the order allocate() takes them.
  std::vector<int32_t> free_list() const;

 private:
  void unlink(int32_t block);
  void push_front(int32_t block);
  void push_back(int32_t block);

  std::vector<int32_t> refs_;                   // [n_blocks] reference counts
  std::vector<std::optional<BlockKey>> keys_;   // [n_blocks] prefix-cache key, if published
  std::unordered_map<BlockKey, int32_t, BlockKeyHash> by_key_;
  // The free list, doubly linked through block ids; kNone ends it. A block is
  // on the list exactly when its reference count is zero.
  std::vector<int32_t> prev_, next_;  // [n_blocks]
  int32_t head_ = kNone;  // least recently used
  int32_t tail_ = kNone;  // most recently used
  int32_t free_count_ = 0;
};

}  // namespace tessera::plugins::paged
