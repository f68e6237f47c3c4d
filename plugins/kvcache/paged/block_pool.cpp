#include "block_pool.hpp"

#include <stdexcept>
#include <string>

namespace tessera::plugins::paged {

BlockPool::BlockPool(int32_t n_blocks) {
  if (n_blocks < 1) throw std::invalid_argument("paged kvcache: a block pool needs at least one block");
  refs_.assign(static_cast<size_t>(n_blocks), 0);
  keys_.assign(static_cast<size_t>(n_blocks), std::nullopt);
  prev_.assign(static_cast<size_t>(n_blocks), kNone);
  next_.assign(static_cast<size_t>(n_blocks), kNone);
  // Initially in id order, so a fresh cache hands out blocks 0, 1, 2, ...
  for (int32_t b = 0; b < n_blocks; ++b) push_back(b);
}

void BlockPool::unlink(int32_t block) {
  const auto i = static_cast<size_t>(block);
  if (prev_[i] != kNone) next_[static_cast<size_t>(prev_[i])] = next_[i];
  else head_ = next_[i];
  if (next_[i] != kNone) prev_[static_cast<size_t>(next_[i])] = prev_[i];
  else tail_ = prev_[i];
  prev_[i] = next_[i] = kNone;
  --free_count_;
}

void BlockPool::push_front(int32_t block) {
  const auto i = static_cast<size_t>(block);
  prev_[i] = kNone;
  next_[i] = head_;
  if (head_ != kNone) prev_[static_cast<size_t>(head_)] = block;
  else tail_ = block;
  head_ = block;
  ++free_count_;
}

void BlockPool::push_back(int32_t block) {
  const auto i = static_cast<size_t>(block);
  next_[i] = kNone;
  prev_[i] = tail_;
  if (tail_ != kNone) next_[static_cast<size_t>(tail_)] = block;
  else head_ = block;
  tail_ = block;
  ++free_count_;
}

int32_t BlockPool::allocate() {
  const int32_t block = head_;
  if (block == kNone) return kNone;
  unlink(block);
  forget(block);  // evicted: whatever it cached is about to be overwritten
  refs_[static_cast<size_t>(block)] = 1;
  return block;
}

void BlockPool::retain(int32_t block) {
  int32_t& refs = refs_[static_cast<size_t>(block)];
  if (refs == 0) unlink(block);
  ++refs;
}

void BlockPool::release(int32_t block) {
  int32_t& refs = refs_[static_cast<size_t>(block)];
  if (refs <= 0) {
    // A double free would corrupt the free list; the manager never does it,
    // so reaching this is a bug worth failing loudly on (caught at the plugin edge).
    throw std::logic_error("paged kvcache: block " + std::to_string(block) + " released more often than held");
  }
  if (--refs > 0) return;
  if (has_key(block)) push_back(block);
  else push_front(block);
}

bool BlockPool::publish(int32_t block, const BlockKey& key) {
  auto& slot = keys_[static_cast<size_t>(block)];
  if (slot.has_value() || by_key_.count(key) != 0) return false;
  by_key_.emplace(key, block);
  slot = key;
  return true;
}

void BlockPool::forget(int32_t block) {
  auto& slot = keys_[static_cast<size_t>(block)];
  if (!slot) return;
  by_key_.erase(*slot);
  slot.reset();
}

int32_t BlockPool::find(const BlockKey& key) const {
  auto it = by_key_.find(key);
  return it == by_key_.end() ? kNone : it->second;
}

std::vector<int32_t> BlockPool::free_list() const {
  std::vector<int32_t> order;
  order.reserve(static_cast<size_t>(free_count_));
  for (int32_t b = head_; b != kNone; b = next_[static_cast<size_t>(b)]) order.push_back(b);
  return order;
}

}  // namespace tessera::plugins::paged
