#include "memory_layout.hpp"

namespace tessera::plugins::memory {

Result<MemoryLayout> MemoryLayout::of(const SequenceStateSpec& spec, const std::string& who) {
  if (spec.layers.empty()) return InvalidArgument(who + ": the model's state spec has no layers");
  if (spec.max_context <= 0)
    return InvalidArgument(who + ": the model's max_context is " + std::to_string(spec.max_context) +
                           "; it must be positive");
  MemoryLayout m;
  m.pool_of_layer.assign(spec.layers.size(), -1);
  for (size_t l = 0; l < spec.layers.size(); ++l) {
    const LayerMemorySpec& layer = spec.layers[l];
    const std::string where = who + ": layer " + std::to_string(l);
    switch (layer.kind) {
      case LayerMemoryKind::none:
        break;
      case LayerMemoryKind::attention:
        if (layer.n_kv_head <= 0 || layer.head_dim <= 0)
          return InvalidArgument(where + " keeps K/V of " + std::to_string(layer.n_kv_head) + " heads of " +
                                 std::to_string(layer.head_dim));
        if (m.n_attention_layers > 0 && (layer.n_kv_head != m.n_kv_head || layer.head_dim != m.head_dim))
          return Unsupported(where + " keeps " + std::to_string(layer.n_kv_head) + " K/V heads of " +
                             std::to_string(layer.head_dim) + ", earlier layers " + std::to_string(m.n_kv_head) +
                             " of " + std::to_string(m.head_dim) + ": one shape for every layer is supported");
        m.n_kv_head = layer.n_kv_head;
        m.head_dim = layer.head_dim;
        m.pool_of_layer[l] = m.n_attention_layers++;
        break;
      case LayerMemoryKind::recurrent:
        if (layer.n_state_parts <= 0 || layer.n_state_parts > kMaxStateParts || layer.state_bytes() == 0)
          return InvalidArgument(where + " keeps a recurrent state of " + std::to_string(layer.n_state_parts) +
                                 " parts and " + std::to_string(layer.state_bytes()) + " bytes");
        m.recurrent = true;
        break;
      default:
        return Unsupported(where + " asks for memory of unknown kind " +
                           std::to_string(static_cast<uint32_t>(layer.kind)));
    }
  }
  return m;
}

}  // namespace tessera::plugins::memory
