// BlockStorage: the K/V memory of a paged cache, one K and one V pool per
// attention layer.
//
// Layout per layer, as sequence_memory.hpp prescribes (elements of the cache's dtype):
//   k[n_blocks][block_size][n_kv_head][head_dim]   (v alike)
// A block of one layer is block_size * n_kv_head * head_dim contiguous elements,
// so copying a block's first rows is one memcpy per layer and pool.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/sequence_memory.hpp"
#include "tessera/tensor.hpp"

namespace tessera::plugins::paged {

class BlockStorage {
 public:
  BlockStorage() = default;
  // Allocates 2 * n_pools pools; throws std::bad_alloc when memory runs out.
  BlockStorage(int32_t n_pools, int32_t n_kv_head, int32_t head_dim, int32_t n_blocks, int32_t block_size,
               DType dtype);

  // Rows [0, rows) of block `src` copied into block `dst`, every layer, K and V.
  void copy_rows(int32_t src, int32_t dst, int32_t rows);
  KvLayerView view(int32_t pool);
  int32_t n_pools() const { return static_cast<int32_t>(k_.size()); }

 private:
  int32_t block_size_ = 0;
  int32_t n_kv_head_ = 0;
  int32_t head_dim_ = 0;
  DType dtype_ = DType::f32;
  std::vector<HostBuffer> k_;  // [n_pools] of [n_blocks, block_size, n_kv_head, head_dim]
  std::vector<HostBuffer> v_;  // same
};

}  // namespace tessera::plugins::paged
