#include "block_manager.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace tessera::plugins::paged {
namespace {

std::string seq_name(SeqId seq) { return "paged kvcache: sequence " + std::to_string(seq); }

}  // namespace

BlockManager::BlockManager(const BlockManagerLimits& limits, CopyRows copy_rows)
    : limits_(limits), copy_rows_(std::move(copy_rows)), pool_(limits.n_blocks) {
  if (limits_.block_size < 1) throw std::invalid_argument("paged kvcache: block_size must be at least 1");
  if (limits_.max_sequences < 1) throw std::invalid_argument("paged kvcache: max_sequences must be at least 1");
  if (limits_.max_context <= 0 || limits_.max_context > std::numeric_limits<int32_t>::max()) {
    limits_.max_context = std::numeric_limits<int32_t>::max();
  }
}

BlockManager::Sequence* BlockManager::find(SeqId seq) {
  auto it = sequences_.find(seq);
  return it == sequences_.end() ? nullptr : &it->second;
}

const BlockManager::Sequence* BlockManager::find(SeqId seq) const {
  auto it = sequences_.find(seq);
  return it == sequences_.end() ? nullptr : &it->second;
}

// Ids grow monotonically so that a stale id of a released sequence is reported
// as unknown rather than silently aliasing a newer one; ids in use are skipped on wrap-around.
Result<SeqId> BlockManager::add_sequence(Sequence sequence) {
  if (static_cast<int64_t>(sequences_.size()) >= limits_.max_sequences) {
    return Status(OutOfMemory("paged kvcache: all " + std::to_string(limits_.max_sequences) +
                              " sequences are in use (max_sequences)"));
  }
  do {
    next_id_ = next_id_ == std::numeric_limits<SeqId>::max() ? 0 : next_id_ + 1;
  } while (sequences_.count(next_id_) != 0);
  sequences_.emplace(next_id_, std::move(sequence));
  return next_id_;
}

Result<SeqId> BlockManager::create_sequence() { return add_sequence(Sequence{}); }

void BlockManager::drop_blocks_from(Sequence& s, size_t keep) {
  while (s.table.size() > keep) {
    pool_.release(s.table.back());
    s.table.pop_back();
  }
}

void BlockManager::release(SeqId seq) {
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return;  // unknown ids and double releases are harmless
  drop_blocks_from(it->second, 0);
  sequences_.erase(it);
}

Status BlockManager::append_slots(SeqId seq, int32_t n) {
  Sequence* s = find(seq);
  if (s == nullptr) return NotFound(seq_name(seq) + " does not exist");
  if (n < 0) return InvalidArgument(seq_name(seq) + ": append_slots(" + std::to_string(n) + ") is negative");
  if (n == 0) return Status::Ok();
  const int64_t new_length = static_cast<int64_t>(s->length) + n;
  if (new_length > limits_.max_context) {
    // Not out_of_memory: waiting for other sequences to finish would not help.
    return InvalidArgument(seq_name(seq) + ": " + std::to_string(s->length) + " + " + std::to_string(n) +
                           " tokens exceed max_context " + std::to_string(limits_.max_context));
  }

  // The new tokens first land in the last block's free rows, if it has any.
  // Shared with another table, it is copied first so the other never sees them.
  const int32_t filled_in_last = s->length % limits_.block_size;
  const bool copy_on_write = filled_in_last != 0 && pool_.ref_count(s->table.back()) > 1;
  const int64_t new_blocks = blocks_for(new_length) - static_cast<int64_t>(s->table.size());
  const int64_t needed = new_blocks + (copy_on_write ? 1 : 0);
  if (needed > pool_.free_count()) {
    return OutOfMemory(seq_name(seq) + ": " + std::to_string(n) + " more tokens need " + std::to_string(needed) +
                       " free blocks of " + std::to_string(limits_.block_size) + " tokens; " +
                       std::to_string(pool_.free_count()) + " of " + std::to_string(pool_.total()) + " are free");
  }
  s->table.reserve(static_cast<size_t>(blocks_for(new_length)));  // may throw: before any change

  if (copy_on_write) {
    const int32_t shared = s->table.back();
    const int32_t copy = pool_.allocate();
    copy_rows_(shared, copy, filled_in_last);
    pool_.release(shared);  // still held by the other tables
    s->table.back() = copy;
  } else if (filled_in_last != 0 && pool_.has_key(s->table.back())) {
    // Only after a truncate into a published block: its rows are about to be
    // overwritten, so it no longer holds what its key names.
    pool_.forget(s->table.back());
  }
  for (int64_t i = 0; i < new_blocks; ++i) s->table.push_back(pool_.allocate());
  s->length = static_cast<int32_t>(new_length);
  return Status::Ok();
}

Result<SeqId> BlockManager::fork(SeqId seq) {
  const Sequence* source = find(seq);
  if (source == nullptr) return Status(NotFound(seq_name(seq) + " does not exist"));
  Sequence copy = *source;  // copy before add_sequence may rehash
  auto id = add_sequence(copy);
  if (!id.ok()) {
    return Status(OutOfMemory("paged kvcache: cannot fork sequence " + std::to_string(seq) + ": " +
                              id.status().message()));
  }
  for (int32_t block : copy.table) pool_.retain(block);
  return id;
}

Status BlockManager::truncate(SeqId seq, int32_t new_length) {
  Sequence* s = find(seq);
  if (s == nullptr) return NotFound(seq_name(seq) + " does not exist");
  if (new_length < 0 || new_length > s->length) {
    return InvalidArgument(seq_name(seq) + ": cannot truncate to " + std::to_string(new_length) +
                           " tokens; it holds " + std::to_string(s->length));
  }
  drop_blocks_from(*s, static_cast<size_t>(blocks_for(new_length)));
  s->length = new_length;
  s->keys.resize(std::min(s->keys.size(), static_cast<size_t>(new_length / limits_.block_size)));
  return Status::Ok();
}

int32_t BlockManager::length(SeqId seq) const {
  const Sequence* s = find(seq);
  return s == nullptr ? 0 : s->length;
}

std::span<const int32_t> BlockManager::block_table(SeqId seq) const {
  const Sequence* s = find(seq);
  if (s == nullptr) return {};
  return s->table;
}

int32_t BlockManager::reuse_prefix(SeqId seq, std::span<const int32_t> tokens) {
  Sequence* s = find(seq);
  if (s == nullptr || s->length != 0 || tokens.size() < 2) return 0;
  const size_t B = static_cast<size_t>(limits_.block_size);
  // Never the block holding the last token: the engine must still compute its
  // logits, so at most (tokens - 1) rounded down to whole blocks.
  const size_t max_blocks = (tokens.size() - 1) / B;
  std::vector<BlockKey> keys;
  std::vector<int32_t> hits;
  std::optional<BlockKey> parent;
  for (size_t b = 0; b < max_blocks; ++b) {
    const BlockKey key = chain_block_key(parent, tokens.subspan(b * B, B));
    const int32_t block = pool_.find(key);
    if (block == BlockPool::kNone) break;
    keys.push_back(key);
    hits.push_back(block);
    parent = key;
  }
  if (hits.empty()) return 0;
  s->table.reserve(hits.size());  // may throw: before any change
  for (int32_t block : hits) {
    pool_.retain(block);
    s->table.push_back(block);
  }
  s->keys = std::move(keys);
  s->length = static_cast<int32_t>(hits.size() * B);
  prefix_hit_tokens_ += s->length;
  return s->length;
}

void BlockManager::record_tokens(SeqId seq, std::span<const int32_t> tokens) {
  Sequence* s = find(seq);
  if (s == nullptr) return;
  const size_t B = static_cast<size_t>(limits_.block_size);
  // Only slots that exist, and only full blocks: a partial block still changes.
  const size_t n_full = std::min(tokens.size(), static_cast<size_t>(s->length)) / B;
  for (size_t b = s->keys.size(); b < n_full; ++b) {
    std::optional<BlockKey> parent;
    if (b > 0) parent = s->keys[b - 1];
    s->keys.push_back(chain_block_key(parent, tokens.subspan(b * B, B)));
    // Refused when this block already has a key or another block holds the
    // same content: the chain continues either way.
    pool_.publish(s->table[b], s->keys.back());
  }
}

int64_t BlockManager::live_tokens() const {
  // Rows filled in each block, the most any table holding it uses. Work in
  // proportion to the tables, not the pool: the schedulers ask every step,
  // and a pool sized from a memory budget (or only counting the tokens of a
  // recurrent model) has far more blocks than are in use. Only blocks with
  // more than one reference can be in two tables.
  int64_t total = 0;
  std::unordered_map<int32_t, int32_t> shared;  // block -> the most rows a table holding it uses
  for (const auto& [id, s] : sequences_) {
    for (size_t b = 0; b < s.table.size(); ++b) {
      const auto rows = static_cast<int32_t>(
          std::min<int64_t>(limits_.block_size, s.length - static_cast<int64_t>(b) * limits_.block_size));
      if (pool_.ref_count(s.table[b]) <= 1) {
        total += rows;
      } else {
        int32_t& f = shared[s.table[b]];
        f = std::max(f, rows);
      }
    }
  }
  for (const auto& [block, rows] : shared) total += rows;
  return total;
}

}  // namespace tessera::plugins::paged
