// Tagged K/V rows for cache tests: every layer's K and V row of a token gets
// values that encode a tag, the layer and the element, so a test can tell
// whose data a slot holds after appends, forks, copy-on-write and reuse.
// Works through any cache's layer views, for f32 and f16 pools.
#pragma once

#include <cstdint>

#include "tessera/half.hpp"
#include "tessera/sequence_memory.hpp"

namespace tessera::test {

// K[i] = tag + 100 * layer + 0.01 * i, V[i] = -K[i], for token `pos` of `seq` in layers [0, n_layer).
inline void write_tagged_token(SequenceMemory& cache, int32_t n_layer, SeqId seq, int64_t pos, float tag) {
  for (int32_t l = 0; l < n_layer; ++l) {
    KvLayerView view = cache.layer(l);
    const int64_t off = view.slot_offset(cache.block_table(seq), pos);
    for (int64_t i = 0; i < view.row_stride(); ++i) {
      const float value = tag + 100.0f * l + 0.01f * i;
      const float negated = -value;
      kv_store(view, view.k, off + i, &value, 1);
      kv_store(view, view.v, off + i, &negated, 1);
    }
  }
}

// Whether token `pos` of `seq` holds what write_tagged_token wrote with `tag`,
// rounded as the pool's dtype rounds it.
inline bool token_has_tag(SequenceMemory& cache, int32_t n_layer, SeqId seq, int64_t pos, float tag) {
  for (int32_t l = 0; l < n_layer; ++l) {
    KvLayerView view = cache.layer(l);
    const int64_t off = view.slot_offset(cache.block_table(seq), pos);
    for (int64_t i = 0; i < view.row_stride(); ++i) {
      float want = tag + 100.0f * l + 0.01f * i;
      if (view.dtype == DType::f16) want = f16_to_f32(f32_to_f16(want));
      float k = 0.0f, v = 0.0f;
      kv_load(view, view.k, off + i, &k, 1);
      kv_load(view, view.v, off + i, &v, 1);
      if (k != want || v != -want) return false;
    }
  }
  return true;
}

}  // namespace tessera::test
