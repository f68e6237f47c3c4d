// Argument checks shared by the attention kernels (header-only; the flash
// kernel includes it from here so both kernels accept exactly the same input).
#pragma once

#include <cmath>
#include <string>

#include "tessera/attention.hpp"

namespace tessera::plugins {

// Everything a kernel must know before reading memory: head counts divide,
// the view matches the query heads, and every sequence's block table covers
// the positions it will attend to. Block ids themselves cannot be checked here
// (the view does not carry the pool's block count); the cache owns them.
inline Status check_attention_args(const AttentionArgs& a, const char* kernel) {
  const std::string who = std::string("attention ") + kernel + ": ";
  if (a.n_head <= 0 || a.n_kv_head <= 0 || a.head_dim <= 0) {
    return InvalidArgument(who + "n_head " + std::to_string(a.n_head) + ", n_kv_head " +
                           std::to_string(a.n_kv_head) + " and head_dim " + std::to_string(a.head_dim) +
                           " must be positive");
  }
  if (a.n_head % a.n_kv_head != 0) {
    return InvalidArgument(who + "n_head " + std::to_string(a.n_head) + " is not a multiple of n_kv_head " +
                           std::to_string(a.n_kv_head));
  }
  if (a.kv.n_kv_head != a.n_kv_head || a.kv.head_dim != a.head_dim) {
    return InvalidArgument(who + "the KV view holds " + std::to_string(a.kv.n_kv_head) + " heads of " +
                           std::to_string(a.kv.head_dim) + " but the call expects " +
                           std::to_string(a.n_kv_head) + " heads of " + std::to_string(a.head_dim));
  }
  if (!std::isfinite(a.scale)) return InvalidArgument(who + "scale is not finite");
  if (a.kv.dtype != DType::f32 && a.kv.dtype != DType::f16) {
    return InvalidArgument(who + "the KV view holds " + std::string(dtype_name(a.kv.dtype)) +
                           " elements; kernels read f32 or f16");
  }
  bool any_query = false;
  for (size_t s = 0; s < a.seqs.size(); ++s) {
    const AttentionSeq& seq = a.seqs[s];
    const std::string which = who + "sequence #" + std::to_string(s) + ": ";
    if (seq.n_past < 0 || seq.n_query < 0 || seq.q_row < 0) {
      return InvalidArgument(which + "n_past " + std::to_string(seq.n_past) + ", n_query " +
                             std::to_string(seq.n_query) + " and q_row " + std::to_string(seq.q_row) +
                             " must not be negative");
    }
    if (seq.n_query == 0) continue;
    any_query = true;
    if (a.kv.block_size <= 0) return InvalidArgument(which + "the KV view has no blocks (block_size <= 0)");
    const int64_t context = static_cast<int64_t>(seq.n_past) + seq.n_query;
    const int64_t blocks_needed = (context + a.kv.block_size - 1) / a.kv.block_size;
    if (static_cast<int64_t>(seq.block_table.size()) < blocks_needed) {
      return InvalidArgument(which + std::to_string(context) + " positions need " + std::to_string(blocks_needed) +
                             " blocks of " + std::to_string(a.kv.block_size) + " but the block table has " +
                             std::to_string(seq.block_table.size()));
    }
    for (int64_t b = 0; b < blocks_needed; ++b) {
      if (seq.block_table[static_cast<size_t>(b)] < 0) {
        return InvalidArgument(which + "block table entry " + std::to_string(b) + " is negative");
      }
    }
  }
  if (any_query && (a.q == nullptr || a.out == nullptr || a.kv.k == nullptr || a.kv.v == nullptr)) {
    return InvalidArgument(who + "q, out and the K/V pools must not be null");
  }
  return Status::Ok();
}

}  // namespace tessera::plugins
