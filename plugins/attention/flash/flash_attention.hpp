// FlashAttention-style tiled attention on the CPU.
//
// Work is split into items (sequence, KV head, block of query rows), run in
// parallel with OpenMP. An item walks the keys in tiles of `tile` positions:
// it gathers the tile's K and V once (through the block table, so any block
// size works) and uses it for every query of the item: all query rows of the
// block times all query heads of the GQA group. Softmax is computed online
// (running max m, running sum l, accumulator rescaled when m grows), so no
// score matrix larger than one tile row is ever held. Accumulation is f32.
#pragma once

#include <cstdint>

#include "tessera/attention.hpp"
#include "tessera/params.hpp"

namespace tessera::plugins {

class FlashAttention final : public AttentionKernel {
 public:
  // Parameters: tile (keys per tile), query_rows (query rows per work item).
  explicit FlashAttention(const ParamValues& params);
  Status forward(const AttentionArgs& args) noexcept override;

  int32_t tile() const { return tile_; }
  int32_t query_rows() const { return query_rows_; }

 private:
  int32_t tile_ = 64;
  int32_t query_rows_ = 16;
};

}  // namespace tessera::plugins
