// memory_layout.hpp: what the in-tree memory plugins make of a model's
// SequenceStateSpec: which layers get K/V pools, their shape, and whether
// recurrent state is kept.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/sequence_memory.hpp"

namespace tessera::plugins::memory {

struct MemoryLayout {
  std::vector<int32_t> pool_of_layer;  // [n_layer]: index of the layer's K/V pools, -1 for layers without attention
  int32_t n_attention_layers = 0;
  int32_t n_kv_head = 0;               // of every attention layer
  int32_t head_dim = 0;
  bool recurrent = false;              // some layer keeps a recurrent state

  int32_t n_layer() const { return static_cast<int32_t>(pool_of_layer.size()); }
  // K and V of one token over the attention layers, `element_bytes` per value.
  uint64_t kv_bytes_per_token(uint64_t element_bytes) const {
    return 2ull * static_cast<uint64_t>(n_attention_layers) * static_cast<uint64_t>(n_kv_head) *
           static_cast<uint64_t>(head_dim) * element_bytes;
  }

  // Checks the spec (known kinds, positive sizes, one K/V shape for every
  // attention layer, at most kMaxStateParts state parts) and lays it out.
  // `who` names the plugin in messages.
  static Result<MemoryLayout> of(const SequenceStateSpec& spec, const std::string& who);
};

}  // namespace tessera::plugins::memory
