// recurrent_states.hpp: the fixed-size state recurrent layers keep per
// sequence (Mamba's conv window and SSM state), in slots of one pool: a slot
// holds every recurrent layer's parts of one sequence, or of one checkpoint.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "tessera/sequence_memory.hpp"
#include "tessera/tensor.hpp"

namespace tessera::plugins::memory {

class RecurrentStates {
 public:
  RecurrentStates() = default;
  // `n_slots` slots for the recurrent layers of `spec` (none: an empty pool).
  // Throws std::bad_alloc when the memory cannot be had.
  RecurrentStates(const SequenceStateSpec& spec, int32_t n_slots);

  // Bytes of one slot: every recurrent layer's parts of one sequence.
  uint64_t slot_bytes() const { return slot_floats_ * sizeof(float); }
  int32_t total() const { return n_slots_; }
  int32_t used() const { return n_slots_ - static_cast<int32_t>(free_.size()); }
  int32_t free() const { return static_cast<int32_t>(free_.size()); }

  // A zeroed slot, or nullopt when all are taken.
  std::optional<int32_t> take();
  void give_back(int32_t slot);
  // Slot `to` becomes a copy of slot `from`.
  void copy(int32_t from, int32_t to);
  // Layer `layer`'s parts in `slot`; all nullptr for a layer without state.
  RecurrentStateView view(int32_t slot, int32_t layer);

 private:
  struct LayerParts {
    int32_t n_parts = 0;
    std::array<uint64_t, kMaxStateParts> offset{};  // floats from the slot's start
  };
  std::vector<LayerParts> layers_;  // [n_layer]
  uint64_t slot_floats_ = 0;
  int32_t n_slots_ = 0;
  HostBuffer storage_;              // [n_slots, slot_floats] f32
  std::vector<int32_t> free_;       // taken from the back
};

}  // namespace tessera::plugins::memory
