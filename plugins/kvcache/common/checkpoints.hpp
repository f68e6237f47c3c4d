// checkpoints.hpp: the checkpoints of every sequence of a memory plugin: the
// length a sequence had and, for a model with recurrent layers, the state
// slot holding a copy of its state then.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "tessera/sequence_memory.hpp"

namespace tessera::plugins::memory {

struct Checkpoint {
  CheckpointId id = 0;
  int32_t length = 0;
  int32_t state_slot = -1;  // -1: no recurrent state
};

class CheckpointTable {
 public:
  CheckpointId add(SeqId seq, int32_t length, int32_t state_slot);
  const Checkpoint* find(SeqId seq, CheckpointId id) const;
  // Forgets one checkpoint; returns it (its state slot is the caller's to free).
  std::optional<Checkpoint> remove(SeqId seq, CheckpointId id);
  // Forgets every checkpoint of `seq` (released); returns them.
  std::vector<Checkpoint> remove_all(SeqId seq);
  // Forgets the checkpoints of `seq` longer than `length` (it was truncated
  // below them: their tokens are gone); returns them.
  std::vector<Checkpoint> remove_longer(SeqId seq, int32_t length);

 private:
  std::unordered_map<SeqId, std::vector<Checkpoint>> by_sequence_;
  CheckpointId next_id_ = 0;
};

}  // namespace tessera::plugins::memory
