#include "recurrent_states.hpp"

#include <algorithm>
#include <cstring>

namespace tessera::plugins::memory {

RecurrentStates::RecurrentStates(const SequenceStateSpec& spec, int32_t n_slots) : layers_(spec.layers.size()) {
  for (size_t l = 0; l < spec.layers.size(); ++l) {
    const LayerMemorySpec& layer = spec.layers[l];
    if (layer.kind != LayerMemoryKind::recurrent) continue;
    layers_[l].n_parts = layer.n_state_parts;
    for (int32_t p = 0; p < layer.n_state_parts; ++p) {
      layers_[l].offset[static_cast<size_t>(p)] = slot_floats_;
      slot_floats_ += layer.state_elements[static_cast<size_t>(p)];
    }
  }
  if (slot_floats_ == 0) return;
  n_slots_ = n_slots;
  storage_ = HostBuffer(static_cast<size_t>(n_slots) * slot_floats_ * sizeof(float));
  // Handed out lowest first (taken from the back).
  for (int32_t s = n_slots - 1; s >= 0; --s) free_.push_back(s);
}

std::optional<int32_t> RecurrentStates::take() {
  if (free_.empty()) return std::nullopt;
  const int32_t slot = free_.back();
  free_.pop_back();
  std::memset(storage_.as<float>() + static_cast<size_t>(slot) * slot_floats_, 0, slot_bytes());
  return slot;
}

void RecurrentStates::give_back(int32_t slot) { free_.push_back(slot); }

void RecurrentStates::copy(int32_t from, int32_t to) {
  if (from == to) return;
  float* base = storage_.as<float>();
  std::memcpy(base + static_cast<size_t>(to) * slot_floats_, base + static_cast<size_t>(from) * slot_floats_,
              slot_bytes());
}

RecurrentStateView RecurrentStates::view(int32_t slot, int32_t layer) {
  RecurrentStateView v;
  if (slot < 0 || slot >= n_slots_ || layer < 0 || static_cast<size_t>(layer) >= layers_.size()) return v;
  const LayerParts& parts = layers_[static_cast<size_t>(layer)];
  float* base = storage_.as<float>() + static_cast<size_t>(slot) * slot_floats_;
  for (int32_t p = 0; p < parts.n_parts; ++p) v.parts[static_cast<size_t>(p)] = base + parts.offset[static_cast<size_t>(p)];
  return v;
}

}  // namespace tessera::plugins::memory
