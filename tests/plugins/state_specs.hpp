// State specs for memory-plugin tests, owning the per-layer descriptions a
// SequenceStateSpec only points at.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/sequence_memory.hpp"

namespace tessera::test {

struct OwnedStateSpec {
  int64_t max_context = 0;
  std::vector<LayerMemorySpec> layers;
  SequenceStateSpec spec() const { return {max_context, layers}; }
};

// n_layer attention layers of n_kv_head heads of head_dim.
inline OwnedStateSpec attention_spec(int32_t n_layer, int32_t n_kv_head, int32_t head_dim, int64_t max_context) {
  return {max_context, std::vector<LayerMemorySpec>(static_cast<size_t>(n_layer),
                                                    LayerMemorySpec::attention(n_kv_head, head_dim))};
}

// A Mamba-like layer: a conv window and an SSM state.
inline LayerMemorySpec recurrent_layer(uint64_t conv_elements, uint64_t ssm_elements) {
  LayerMemorySpec l;
  l.kind = LayerMemoryKind::recurrent;
  l.n_state_parts = 2;
  l.state_elements = {conv_elements, ssm_elements, 0, 0};
  return l;
}

inline OwnedStateSpec recurrent_spec(int32_t n_layer, uint64_t conv_elements, uint64_t ssm_elements,
                                     int64_t max_context) {
  return {max_context,
          std::vector<LayerMemorySpec>(static_cast<size_t>(n_layer), recurrent_layer(conv_elements, ssm_elements))};
}

}  // namespace tessera::test
