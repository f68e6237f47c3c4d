// tessera/blocks/kv_rows.hpp: writing a forward's K and V rows into a memory's
// pools, at the best instruction-set level.
//
// The same bits as the SDK's kv_store (tessera/sequence_memory.hpp): f16
// pools round to nearest even. kv_store narrows one value at a time, about
// 45 us per token on the default model with an f16 cache (2% of a prefill
// step); F16C narrows 8 values an instruction.
#pragma once

#include <cstdint>

#include "tessera/sequence_memory.hpp"

namespace tessera::blocks {

// n f32 values written at element `offset` of pool (view.k or view.v).
void store_kv(const KvLayerView& view, void* pool, int64_t offset, const float* src, int64_t n) noexcept;

}  // namespace tessera::blocks
