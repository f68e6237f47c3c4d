#include "block_storage.hpp"

#include <cstring>

namespace tessera::plugins::paged {

BlockStorage::BlockStorage(const SequenceStateSpec& spec, int32_t n_blocks, int32_t block_size, DType dtype)
    : block_size_(block_size), n_kv_head_(spec.n_kv_head), head_dim_(spec.head_dim), dtype_(dtype) {
  // The caller (PagedKvCache::configure) has checked that this product fits.
  const size_t pool_bytes = static_cast<size_t>(n_blocks) * static_cast<size_t>(block_size) *
                            static_cast<size_t>(spec.n_kv_head) * static_cast<size_t>(spec.head_dim) *
                            kv_element_bytes(dtype);
  k_.reserve(static_cast<size_t>(spec.n_layer));
  v_.reserve(static_cast<size_t>(spec.n_layer));
  for (int32_t l = 0; l < spec.n_layer; ++l) {
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

KvLayerView BlockStorage::view(int32_t layer) {
  if (layer < 0 || layer >= n_layer()) return {};
  KvLayerView view;
  view.block_size = block_size_;
  view.n_kv_head = n_kv_head_;
  view.head_dim = head_dim_;
  view.dtype = dtype_;
  view.k = k_[static_cast<size_t>(layer)].data();
  view.v = v_[static_cast<size_t>(layer)].data();
  return view;
}

}  // namespace tessera::plugins::paged
