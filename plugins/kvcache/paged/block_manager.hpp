// BlockManager: sequences as block tables over a BlockPool (host logic only).
//
// It implements the bookkeeping half of the SequenceMemory contract: sequences and
// their block tables, fork (tables share blocks, reference counts +1),
// copy-on-write of a shared, partially filled last block, truncate, release,
// and the prefix cache (reuse_prefix / record_tokens over chained block keys).
// Moving K/V is not its job: when copy-on-write needs a block's rows copied,
// it calls the CopyRows hook, which the paged cache points at its storage and
// tests point at a recorder. So every rule here is testable without memory.
//
// Block b of a sequence holds tokens [b * block_size, (b + 1) * block_size).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <unordered_map>
#include <vector>

#include "block_key.hpp"
#include "block_pool.hpp"
#include "tessera/sequence_memory.hpp"
#include "tessera/status.hpp"

namespace tessera::plugins::paged {

// Copies the first `rows` token rows of block `src` into block `dst`, every layer, K and V.
using CopyRows = std::function<void(int32_t src, int32_t dst, int32_t rows)>;

struct BlockManagerLimits {
  int32_t n_blocks = 1;
  int32_t block_size = 16;
  int64_t max_sequences = 256;
  int64_t max_context = 0;  // longest sequence; 0 = no limit below 2^31 - 1
};

class BlockManager {
 public:
  BlockManager(const BlockManagerLimits& limits, CopyRows copy_rows);

  Result<SeqId> create_sequence();
  void release(SeqId seq);
  // Fails with out_of_memory, changing nothing, when the pool lacks the blocks
  // (new ones plus one for copy-on-write).
  Status append_slots(SeqId seq, int32_t n);
  Result<SeqId> fork(SeqId seq);
  Status truncate(SeqId seq, int32_t new_length);
  int32_t length(SeqId seq) const;
  bool contains(SeqId seq) const { return find(seq) != nullptr; }
  std::span<const int32_t> block_table(SeqId seq) const;

  // Prefix cache; see sequence_memory.hpp and docs/paged-kv.md.
  int32_t reuse_prefix(SeqId seq, std::span<const int32_t> tokens);
  void record_tokens(SeqId seq, std::span<const int32_t> tokens);

  const BlockPool& pool() const { return pool_; }
  int32_t block_size() const { return limits_.block_size; }
  // Tokens held by live sequences, a token in a shared block counted once.
  int64_t live_tokens() const;
  int64_t prefix_hit_tokens() const { return prefix_hit_tokens_; }
  int64_t sequence_count() const { return static_cast<int64_t>(sequences_.size()); }

 private:
  struct Sequence {
    std::vector<int32_t> table;  // logical block -> physical block
    int32_t length = 0;          // tokens
    // Chained keys of the first keys.size() blocks, as far as record_tokens or
    // reuse_prefix have told us their tokens; only ever full blocks.
    std::vector<BlockKey> keys;
  };

  Sequence* find(SeqId seq);
  const Sequence* find(SeqId seq) const;
  Result<SeqId> add_sequence(Sequence sequence);
  // Drops blocks [keep, table.size()), last first, so that a sequence's head
  // blocks are the most recently freed and outlive its tail in the prefix cache.
  void drop_blocks_from(Sequence& s, size_t keep);
  int32_t blocks_for(int64_t tokens) const {
    return static_cast<int32_t>((tokens + limits_.block_size - 1) / limits_.block_size);
  }

  BlockManagerLimits limits_;
  CopyRows copy_rows_;
  BlockPool pool_;
  std::unordered_map<SeqId, Sequence> sequences_;  // node-stable: table spans survive rehashing
  SeqId next_id_ = 0;
  int64_t prefix_hit_tokens_ = 0;
};

}  // namespace tessera::plugins::paged
