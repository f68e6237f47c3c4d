#include "state_snapshots.hpp"

#include <optional>
#include <stdexcept>
#include <string>

namespace tessera::plugins::memory {

SnapshotSettings snapshot_settings(const ParamValues& params, const std::string& plugin) {
  SnapshotSettings settings;
  const int64_t capacity = params.has("prefix_snapshots") ? params.get_int("prefix_snapshots") : settings.capacity;
  const int64_t interval = params.has("snapshot_interval") ? params.get_int("snapshot_interval") : settings.interval;
  if (capacity < 0 || capacity > 65536) throw std::invalid_argument(plugin + ": prefix_snapshots must be in [0, 65536]");
  if (interval < 1 || interval > 1048576)
    throw std::invalid_argument(plugin + ": snapshot_interval must be in [1, 1048576]");
  settings.capacity = static_cast<int32_t>(capacity);
  settings.interval = static_cast<int32_t>(interval);
  return settings;
}

StateSnapshots::StateSnapshots(int32_t capacity, int32_t interval, RecurrentStates& states)
    : capacity_(capacity), interval_(interval) {
  if (capacity < 0 || interval < 1) throw std::invalid_argument("state snapshots: capacity >= 0 and interval >= 1");
  if (capacity > states.free()) throw std::invalid_argument("state snapshots: fewer free state slots than capacity");
  idle_.reserve(static_cast<size_t>(capacity));
  for (int32_t i = 0; i < capacity; ++i) idle_.push_back(*states.take());
}

void StateSnapshots::record(std::span<const int32_t> tokens, RecurrentStates& states, int32_t slot) {
  const auto B = static_cast<size_t>(interval_);
  if (!enabled() || tokens.empty() || tokens.size() % B != 0) return;
  std::optional<BlockKey> key;
  for (size_t b = 0; b < tokens.size() / B; ++b) key = chain_block_key(key, tokens.subspan(b * B, B));
  if (const auto it = by_key_.find(*key); it != by_key_.end()) {
    it->second.last_used = ++clock_;
    return;
  }
  int32_t target = -1;
  if (!idle_.empty()) {
    target = idle_.back();
    idle_.pop_back();
  } else {
    // Give up the least recently used snapshot for this one.
    auto oldest = by_key_.begin();
    for (auto it = by_key_.begin(); it != by_key_.end(); ++it)
      if (it->second.last_used < oldest->second.last_used) oldest = it;
    target = oldest->second.slot;
    by_key_.erase(oldest);
  }
  try {
    by_key_.emplace(*key, Snapshot{target, ++clock_});
  } catch (...) {
    idle_.push_back(target);  // reserved to capacity: does not allocate
    throw;
  }
  states.copy(slot, target);
}

StateSnapshots::Hit StateSnapshots::find(std::span<const int32_t> tokens) {
  if (!enabled() || by_key_.empty() || tokens.size() < 2) return {};
  const auto B = static_cast<size_t>(interval_);
  std::optional<BlockKey> key;
  Snapshot* best = nullptr;
  size_t best_length = 0;
  // Snapshots exist only where sequences stopped, so a missing block does
  // not rule out a longer hit: every whole block before the last token is tried.
  for (size_t b = 0; b < (tokens.size() - 1) / B; ++b) {
    key = chain_block_key(key, tokens.subspan(b * B, B));
    if (const auto it = by_key_.find(*key); it != by_key_.end()) best = &it->second, best_length = (b + 1) * B;
  }
  if (best == nullptr) return {};
  best->last_used = ++clock_;
  return {static_cast<int32_t>(best_length), best->slot};
}

int32_t StateSnapshots::restore(std::span<const int32_t> tokens, RecurrentStates& states, int32_t slot) {
  const Hit hit = find(tokens);
  if (hit.length > 0) states.copy(hit.slot, slot);
  return hit.length;
}

void StateSnapshots::clear() {
  for (const auto& [key, snapshot] : by_key_) idle_.push_back(snapshot.slot);
  by_key_.clear();
}

}  // namespace tessera::plugins::memory
