#include "block_storage.hpp"

#include <cstring>

namespace tessera::plugins::paged {

BlockStorage::BlockStorage(int32_t n_pools, int32_t n_kv_head, int32_t head_dim, int32_t n_blocks,
                           int32_t block_size, DType dtype)
    : block_size_(block_size), n_kv_head_(n_kv_head), head_dim_(head_dim), dtype_(dtype) {
  // The caller (PagedKvCache::configure) has checked that this product fits.
  const size_t pool_bytes = static_cast<size_t>(n_blocks) * static_cast<size_t>(block_size) *
                            static_cast<size_t>(n_kv_head) * static_cast<size_t>(head_dim) * kv_element_bytes(dtype);
  k_.reserve(static_cast<size_t>(n_pools));
  v_.reserve(static_cast<size_t>(n_pools));
  for (int32_t l = 0; l < n_pools; ++l) {
    k_.emplace_back(pool_bytes);
    v_.emplace_back(pool_bytes);
  }
}

void BlockStorage::copy_rows(int32_t src, int32_t dst, int32_t rows) {
  const size_t row_bytes = static_cast<size_t>(n_kv_head_) * static_cast<size_t>(head_dim_) * kv_element_bytes(dtype_);
  const size_t block_bytes = static_cast<size_t>(block_size_) * row_bytes;
  const size_t bytes = static_cast<size_t>(rows) * row_bytes;
  for (auto* pools : {&k_, &v_}) {
    for (HostBuffer& pool : *pools) {
      auto* base = pool.as<uint8_t>();
      std::memcpy(base + static_cast<size_t>(dst) * block_bytes, base + static_cast<size_t>(src) * block_bytes,
                  bytes);
    }
  }
}

KvLayerView BlockStorage::view(int32_t pool) {
  if (pool < 0 || pool >= n_pools()) return {};
  KvLayerView view;
  view.block_size = block_size_;
  view.n_kv_head = n_kv_head_;
  view.head_dim = head_dim_;
  view.dtype = dtype_;
  view.k = k_[static_cast<size_t>(pool)].data();
  view.v = v_[static_cast<size_t>(pool)].data();
  return view;
}

}  // namespace tessera::plugins::paged
