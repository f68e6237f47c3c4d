// Hand-built KV pools for attention tests: sequences laid out in shuffled
// blocks of any size, the layout kv_cache.hpp prescribes, without a cache
// plugin. Every slot that is not a live token (spare blocks, the tail of a
// sequence's last block) holds NaN, so a kernel that lets a masked or foreign
// slot reach its output fails the comparison instead of passing by luck.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include "tessera/sequence_memory.hpp"

namespace tessera::test {

struct KvTestPool {
  int32_t block_size = 0;
  int32_t n_kv_head = 0;
  int32_t head_dim = 0;
  std::vector<float> k;  // [n_blocks, block_size, n_kv_head, head_dim]
  std::vector<float> v;  // [n_blocks, block_size, n_kv_head, head_dim]
  std::vector<std::vector<int32_t>> tables;  // per sequence: logical block -> physical block
  DType dtype = DType::f32;
  std::vector<uint16_t> k16, v16;  // the f16 pools, after to_f16()

  // Makes the view an f16 pool holding the values rounded to nearest even (NaN stays NaN).
  void to_f16() {
    dtype = DType::f16;
    k16.resize(k.size());
    v16.resize(v.size());
    for (size_t i = 0; i < k.size(); ++i) {
      k16[i] = f32_to_f16(k[i]);
      v16[i] = f32_to_f16(v[i]);
    }
  }

  KvLayerView view() {
    KvLayerView view;
    view.block_size = block_size;
    view.n_kv_head = n_kv_head;
    view.head_dim = head_dim;
    view.dtype = dtype;
    view.k = dtype == DType::f16 ? static_cast<void*>(k16.data()) : static_cast<void*>(k.data());
    view.v = dtype == DType::f16 ? static_cast<void*>(v16.data()) : static_cast<void*>(v.data());
    return view;
  }
};

// A pool holding sequences of `lengths` tokens (K and V uniform in [-1, 1]),
// their blocks scattered in a random order among `spare_blocks` unused ones.
inline KvTestPool make_shuffled_pool(std::span<const int32_t> lengths, int32_t block_size, int32_t n_kv_head,
                                     int32_t head_dim, std::mt19937& rng, int32_t spare_blocks = 3) {
  KvTestPool pool;
  pool.block_size = block_size;
  pool.n_kv_head = n_kv_head;
  pool.head_dim = head_dim;

  int32_t n_blocks = spare_blocks;
  for (int32_t len : lengths) n_blocks += (len + block_size - 1) / block_size;
  std::vector<int32_t> order(static_cast<size_t>(n_blocks));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);

  const size_t row = static_cast<size_t>(n_kv_head) * head_dim;
  const size_t floats = static_cast<size_t>(n_blocks) * block_size * row;
  pool.k.assign(floats, std::numeric_limits<float>::quiet_NaN());
  pool.v.assign(floats, std::numeric_limits<float>::quiet_NaN());

  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  size_t next = 0;
  for (int32_t len : lengths) {
    std::vector<int32_t> table;
    for (int32_t b = 0; b < (len + block_size - 1) / block_size; ++b) table.push_back(order[next++]);
    for (int32_t pos = 0; pos < len; ++pos) {
      const size_t off = (static_cast<size_t>(table[static_cast<size_t>(pos / block_size)]) * block_size +
                          static_cast<size_t>(pos % block_size)) * row;
      for (size_t i = 0; i < row; ++i) {
        pool.k[off + i] = value(rng);
        pool.v[off + i] = value(rng);
      }
    }
    pool.tables.push_back(std::move(table));
  }
  return pool;
}

}  // namespace tessera::test
