#include "checkpoints.hpp"

#include <algorithm>
#include <limits>

namespace tessera::plugins::memory {

CheckpointId CheckpointTable::add(SeqId seq, int32_t length, int32_t state_slot) {
  next_id_ = next_id_ == std::numeric_limits<CheckpointId>::max() ? 0 : next_id_ + 1;
  by_sequence_[seq].push_back({next_id_, length, state_slot});
  return next_id_;
}

const Checkpoint* CheckpointTable::find(SeqId seq, CheckpointId id) const {
  auto it = by_sequence_.find(seq);
  if (it == by_sequence_.end()) return nullptr;
  for (const Checkpoint& c : it->second)
    if (c.id == id) return &c;
  return nullptr;
}

std::optional<Checkpoint> CheckpointTable::remove(SeqId seq, CheckpointId id) {
  auto it = by_sequence_.find(seq);
  if (it == by_sequence_.end()) return std::nullopt;
  auto& list = it->second;
  auto c = std::find_if(list.begin(), list.end(), [id](const Checkpoint& x) { return x.id == id; });
  if (c == list.end()) return std::nullopt;
  const Checkpoint removed = *c;
  list.erase(c);
  if (list.empty()) by_sequence_.erase(it);
  return removed;
}

std::vector<Checkpoint> CheckpointTable::remove_all(SeqId seq) {
  auto it = by_sequence_.find(seq);
  if (it == by_sequence_.end()) return {};
  std::vector<Checkpoint> removed = std::move(it->second);
  by_sequence_.erase(it);
  return removed;
}

std::vector<Checkpoint> CheckpointTable::remove_longer(SeqId seq, int32_t length) {
  std::vector<Checkpoint> removed;
  auto it = by_sequence_.find(seq);
  if (it == by_sequence_.end()) return removed;
  auto& list = it->second;
  for (const Checkpoint& c : list)
    if (c.length > length) removed.push_back(c);
  std::erase_if(list, [length](const Checkpoint& c) { return c.length > length; });
  if (list.empty()) by_sequence_.erase(it);
  return removed;
}

}  // namespace tessera::plugins::memory
