#include "contiguous_cache.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>

namespace tessera::plugins {
namespace {

// a * b, or false when the product does not fit in uint64.
bool checked_mul(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }

std::string seq_name(SeqId seq) { return "contiguous kvcache: sequence " + std::to_string(seq); }

}  // namespace

ContiguousKvCache::ContiguousKvCache(const ParamValues& params)
    : max_sequences_(params.get_int("max_sequences")),
      requested_context_(params.get_int("max_context")),
      memory_cap_(params.has("memory") ? params.get_int("memory") : 0) {
  // Validation normally happens in the core against the declared specs; these
  // guard direct construction (tests, other hosts) against nonsense values.
  if (max_sequences_ < 1 || max_sequences_ > std::numeric_limits<int32_t>::max()) {
    throw std::invalid_argument("contiguous kvcache: max_sequences must be in [1, 2^31), got " +
                                std::to_string(max_sequences_));
  }
  if (requested_context_ < 0) {
    throw std::invalid_argument("contiguous kvcache: max_context must be >= 0, got " +
                                std::to_string(requested_context_));
  }
  if (memory_cap_ < 0) {
    throw std::invalid_argument("contiguous kvcache: memory must be >= 0, got " + std::to_string(memory_cap_));
  }
  const std::string dtype = params.has("dtype") ? params.get_string("dtype") : "f32";
  if (!parse_kv_dtype(dtype, &dtype_)) {
    throw std::invalid_argument("contiguous kvcache: dtype must be f32 or f16, got '" + dtype + "'");
  }
}

Status ContiguousKvCache::configure(const SequenceStateSpec& spec) noexcept {
  return guard([&]() -> Status {
    if (configured_) return InvalidArgument("contiguous kvcache: configure() called twice");
    if (spec.n_layer <= 0 || spec.n_kv_head <= 0 || spec.head_dim <= 0) {
      return InvalidArgument("contiguous kvcache: the model's state spec has no KV (n_layer " +
                             std::to_string(spec.n_layer) + ", n_kv_head " + std::to_string(spec.n_kv_head) +
                             ", head_dim " + std::to_string(spec.head_dim) + ")");
    }
    if (spec.fixed_bytes_per_sequence != 0) {
      return Unsupported("contiguous kvcache: the model needs " + std::to_string(spec.fixed_bytes_per_sequence) +
                         " bytes of fixed per-sequence state (e.g. Mamba), which this cache does not store");
    }
    if (spec.max_context <= 0) {
      return InvalidArgument("contiguous kvcache: the model's max_context is " + std::to_string(spec.max_context) +
                             "; it must be positive");
    }
    const int64_t context = requested_context_ == 0 ? spec.max_context : requested_context_;
    if (context > spec.max_context) {
      return InvalidArgument("contiguous kvcache: max_context = " + std::to_string(context) +
                             " exceeds the model's max_context " + std::to_string(spec.max_context));
    }
    if (context > std::numeric_limits<int32_t>::max()) {
      return Unsupported("contiguous kvcache: a context of " + std::to_string(context) +
                         " tokens does not fit a block (block_size is 32-bit); set max_context lower");
    }

    // Pool bytes = max_sequences * context * kv_bytes_per_token, checked for overflow.
    uint64_t block_bytes = 0;
    uint64_t total_bytes = 0;
    const uint64_t token_bytes = spec.kv_bytes_per_token(kv_element_bytes(dtype_));
    if (!checked_mul(static_cast<uint64_t>(context), token_bytes, &block_bytes) ||
        !checked_mul(block_bytes, static_cast<uint64_t>(max_sequences_), &total_bytes)) {
      return OutOfMemory("contiguous kvcache: max_sequences * max_context * KV bytes per token overflows 64 bits");
    }
    if (memory_cap_ > 0 && total_bytes > static_cast<uint64_t>(memory_cap_)) {
      return OutOfMemory("contiguous kvcache: " + std::to_string(max_sequences_) + " sequences x " +
                         std::to_string(context) + " tokens x " + std::to_string(token_bytes) +
                         " bytes per token = " + std::to_string(total_bytes) + " bytes, more than memory = " +
                         std::to_string(memory_cap_) + "; lower max_sequences or max_context");
    }

    // One K and one V pool per layer: [max_sequences, context, n_kv_head, head_dim] of dtype_.
    const uint64_t layer_pool_bytes = total_bytes / (2ull * static_cast<uint64_t>(spec.n_layer));
    std::vector<HostBuffer> k_pools;
    std::vector<HostBuffer> v_pools;
    try {
      k_pools.reserve(static_cast<size_t>(spec.n_layer));
      v_pools.reserve(static_cast<size_t>(spec.n_layer));
      for (int32_t l = 0; l < spec.n_layer; ++l) {
        k_pools.emplace_back(layer_pool_bytes);
        v_pools.emplace_back(layer_pool_bytes);
      }
    } catch (const std::bad_alloc&) {
      return OutOfMemory("contiguous kvcache: could not allocate " + std::to_string(total_bytes) +
                         " bytes of KV pools; lower max_sequences or max_context");
    }

    spec_ = spec;
    context_ = static_cast<int32_t>(context);
    k_pools_ = std::move(k_pools);
    v_pools_ = std::move(v_pools);
    slot_used_.assign(static_cast<size_t>(max_sequences_), false);
    configured_ = true;
    return Status::Ok();
  });
}

ContiguousKvCache::Sequence* ContiguousKvCache::find(SeqId seq) {
  auto it = sequences_.find(seq);
  return it == sequences_.end() ? nullptr : &it->second;
}

const ContiguousKvCache::Sequence* ContiguousKvCache::find(SeqId seq) const {
  auto it = sequences_.find(seq);
  return it == sequences_.end() ? nullptr : &it->second;
}

int32_t ContiguousKvCache::take_free_slot() {
  auto it = std::find(slot_used_.begin(), slot_used_.end(), false);
  if (it == slot_used_.end()) return -1;
  *it = true;
  return static_cast<int32_t>(it - slot_used_.begin());
}

// Ids grow monotonically so that a stale id of a released sequence is reported
// as unknown rather than silently aliasing a newer sequence; on wrap-around the
// ids still in use are skipped.
SeqId ContiguousKvCache::next_sequence_id() {
  do {
    next_id_ = next_id_ == std::numeric_limits<SeqId>::max() ? 0 : next_id_ + 1;
  } while (sequences_.count(next_id_) != 0);
  return next_id_;
}

Result<SeqId> ContiguousKvCache::create_sequence() noexcept {
  try {
    if (!configured_) return Status(InvalidArgument("contiguous kvcache: create_sequence() before configure()"));
    const int32_t slot = take_free_slot();
    if (slot < 0) {
      return Status(OutOfMemory("contiguous kvcache: all " + std::to_string(max_sequences_) +
                                " sequence slots are in use (max_sequences)"));
    }
    const SeqId id = next_sequence_id();
    sequences_.emplace(id, Sequence{slot, 0});
    return id;
  } catch (const std::exception& e) {
    return Status(Internal(std::string("contiguous kvcache: create_sequence: ") + e.what()));
  }
}

void ContiguousKvCache::release(SeqId seq) noexcept {
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return;  // releasing twice or an unknown id is harmless
  slot_used_[static_cast<size_t>(it->second.slot)] = false;
  sequences_.erase(it);
}

Status ContiguousKvCache::append_slots(SeqId seq, int32_t n) noexcept {
  return guard([&]() -> Status {
    Sequence* s = find(seq);
    if (s == nullptr) return NotFound(seq_name(seq) + " does not exist");
    if (n < 0) return InvalidArgument(seq_name(seq) + ": append_slots(" + std::to_string(n) + ") is negative");
    // A contiguous sequence can never grow past its block, so this is not a
    // transient out_of_memory: waiting for other sequences would not help.
    if (static_cast<int64_t>(s->length) + n > context_) {
      return InvalidArgument(seq_name(seq) + ": " + std::to_string(s->length) + " + " + std::to_string(n) +
                             " tokens exceed max_context " + std::to_string(context_));
    }
    s->length += n;
    return Status::Ok();
  });
}

Result<SeqId> ContiguousKvCache::fork(SeqId seq) noexcept {
  try {
    const Sequence* source = find(seq);
    if (source == nullptr) return Status(NotFound(seq_name(seq) + " does not exist"));
    const Sequence src = *source;  // copy: emplace below may rehash
    const int32_t slot = take_free_slot();
    if (slot < 0) {
      return Status(OutOfMemory("contiguous kvcache: cannot fork " + seq_name(seq) + ": all " +
                                std::to_string(max_sequences_) + " sequence slots are in use"));
    }
    // Contiguous blocks cannot be shared, so the fork copies the live tokens of
    // every layer. Each block is [context, n_kv_head, head_dim] of dtype_.
    const size_t row_bytes = static_cast<size_t>(spec_.n_kv_head) * spec_.head_dim * kv_element_bytes(dtype_);
    const size_t block_bytes = static_cast<size_t>(context_) * row_bytes;
    const size_t live_bytes = static_cast<size_t>(src.length) * row_bytes;
    for (int32_t l = 0; l < spec_.n_layer; ++l) {
      for (HostBuffer* pool : {&k_pools_[static_cast<size_t>(l)], &v_pools_[static_cast<size_t>(l)]}) {
        auto* base = pool->as<uint8_t>();
        std::memcpy(base + static_cast<size_t>(slot) * block_bytes,
                    base + static_cast<size_t>(src.slot) * block_bytes, live_bytes);
      }
    }
    const SeqId id = next_sequence_id();
    sequences_.emplace(id, Sequence{slot, src.length});
    return id;
  } catch (const std::exception& e) {
    return Status(Internal(std::string("contiguous kvcache: fork: ") + e.what()));
  }
}

Status ContiguousKvCache::truncate(SeqId seq, int32_t new_length) noexcept {
  Sequence* s = find(seq);
  if (s == nullptr) return NotFound(seq_name(seq) + " does not exist");
  if (new_length < 0 || new_length > s->length) {
    return InvalidArgument(seq_name(seq) + ": cannot truncate to " + std::to_string(new_length) +
                           " tokens; it holds " + std::to_string(s->length));
  }
  s->length = new_length;
  return Status::Ok();
}

int32_t ContiguousKvCache::length(SeqId seq) const noexcept {
  const Sequence* s = find(seq);
  return s == nullptr ? 0 : s->length;
}

std::span<const int32_t> ContiguousKvCache::block_table(SeqId seq) const noexcept {
  const Sequence* s = find(seq);
  if (s == nullptr) return {};
  return {&s->slot, 1};
}

KvLayerView ContiguousKvCache::layer(int32_t layer) noexcept {
  if (!configured_ || layer < 0 || layer >= spec_.n_layer) return {};
  KvLayerView view;
  view.block_size = context_;
  view.n_kv_head = spec_.n_kv_head;
  view.head_dim = spec_.head_dim;
  view.dtype = dtype_;
  view.k = k_pools_[static_cast<size_t>(layer)].data();
  view.v = v_pools_[static_cast<size_t>(layer)].data();
  return view;
}

KvStats ContiguousKvCache::stats() const noexcept {
  KvStats stats;
  if (!configured_) return stats;
  const uint64_t token_bytes = spec_.kv_bytes_per_token(kv_element_bytes(dtype_));
  const uint64_t block_bytes = static_cast<uint64_t>(context_) * token_bytes;
  uint64_t live_tokens = 0;
  for (const auto& [id, s] : sequences_) live_tokens += static_cast<uint64_t>(s.length);
  stats.blocks_total = max_sequences_;
  stats.blocks_used = static_cast<int64_t>(sequences_.size());
  stats.bytes_allocated = static_cast<uint64_t>(sequences_.size()) * block_bytes;
  stats.bytes_live = live_tokens * token_bytes;
  stats.bytes_reserved = static_cast<uint64_t>(max_sequences_) * block_bytes;
  return stats;
}

}  // namespace tessera::plugins
