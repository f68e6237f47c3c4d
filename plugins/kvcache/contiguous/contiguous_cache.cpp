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
  checkpoint_slots_ = params.has("checkpoints") ? params.get_int("checkpoints") : 0;
  if (checkpoint_slots_ < 0 || checkpoint_slots_ > std::numeric_limits<int32_t>::max() - max_sequences_)
    throw std::invalid_argument("contiguous kvcache: checkpoints must be in [0, 2^31 - max_sequences)");
  if (checkpoint_slots_ == 0) checkpoint_slots_ = max_sequences_;
  snapshot_settings_ = memory::snapshot_settings(params, "contiguous kvcache");
}

Status ContiguousKvCache::configure(const SequenceStateSpec& spec) noexcept {
  return guard([&]() -> Status {
    if (configured_) return InvalidArgument("contiguous kvcache: configure() called twice");
    auto layout = memory::MemoryLayout::of(spec, "contiguous kvcache");
    if (!layout.ok()) return layout.status();
    const int64_t context = requested_context_ == 0 ? spec.max_context : requested_context_;
    if (context > spec.max_context) {
      return InvalidArgument("contiguous kvcache: max_context = " + std::to_string(context) +
                             " exceeds the model's max_context " + std::to_string(spec.max_context));
    }
    if (context > std::numeric_limits<int32_t>::max()) {
      return Unsupported("contiguous kvcache: a context of " + std::to_string(context) +
                         " tokens does not fit a block (block_size is 32-bit); set max_context lower");
    }

    // K/V bytes = max_sequences * context * kv_bytes_per_token, plus the
    // recurrent state slots (sequences and checkpoints), checked for overflow.
    uint64_t block_bytes = 0;
    uint64_t kv_bytes = 0;
    uint64_t state_bytes = 0;
    const uint64_t token_bytes = layout->kv_bytes_per_token(kv_element_bytes(dtype_));
    const int64_t own_slots = layout->recurrent ? max_sequences_ + checkpoint_slots_ : 0;
    const uint64_t slot_bytes = spec.state_bytes_per_sequence();
    if (!checked_mul(static_cast<uint64_t>(context), token_bytes, &block_bytes) ||
        !checked_mul(block_bytes, static_cast<uint64_t>(max_sequences_), &kv_bytes) ||
        !checked_mul(slot_bytes, static_cast<uint64_t>(own_slots), &state_bytes) || kv_bytes + state_bytes < kv_bytes) {
      return InvalidArgument("contiguous kvcache: the pools' size overflows 64 bits; lower max_sequences or max_context");
    }
    uint64_t total_bytes = kv_bytes + state_bytes;
    if (memory_cap_ > 0 && total_bytes > static_cast<uint64_t>(memory_cap_)) {
      return InvalidArgument("contiguous kvcache: " + std::to_string(max_sequences_) + " sequences x " +
                             std::to_string(context) + " tokens x " + std::to_string(token_bytes) +
                             " bytes per token + " + std::to_string(own_slots) + " states x " +
                             std::to_string(slot_bytes) + " bytes = " + std::to_string(total_bytes) +
                             " bytes, more than memory = " + std::to_string(memory_cap_) +
                             "; lower max_sequences or max_context, or raise memory");
    }
    // Snapshots of a model with attention layers too would need its K/V rows
    // kept with them: only all-recurrent models get them, as many as
    // prefix_snapshots asks and `memory` (if set) holds beside the rest.
    int64_t snapshot_slots = layout->recurrent && layout->n_attention_layers == 0 ? snapshot_settings_.capacity : 0;
    snapshot_slots = std::min<int64_t>(snapshot_slots, std::numeric_limits<int32_t>::max() - own_slots);  // slot ids are int32
    if (memory_cap_ > 0 && slot_bytes > 0)
      snapshot_slots = std::min<int64_t>(snapshot_slots,
                                         static_cast<int64_t>((static_cast<uint64_t>(memory_cap_) - total_bytes) / slot_bytes));
    uint64_t snapshot_bytes = 0;
    if (!checked_mul(slot_bytes, static_cast<uint64_t>(snapshot_slots), &snapshot_bytes) ||
        total_bytes + snapshot_bytes < total_bytes)
      return InvalidArgument("contiguous kvcache: the snapshots' size overflows 64 bits; lower prefix_snapshots");
    total_bytes += snapshot_bytes;
    const int64_t state_slots = own_slots + snapshot_slots;

    // One K and one V pool per attention layer: [max_sequences, context, n_kv_head, head_dim] of dtype_.
    const auto n_pools = static_cast<size_t>(layout->n_attention_layers);
    const uint64_t layer_pool_bytes = n_pools == 0 ? 0 : kv_bytes / (2ull * n_pools);
    std::vector<HostBuffer> k_pools;
    std::vector<HostBuffer> v_pools;
    memory::RecurrentStates states;
    try {
      k_pools.reserve(n_pools);
      v_pools.reserve(n_pools);
      for (size_t l = 0; l < n_pools; ++l) {
        k_pools.emplace_back(layer_pool_bytes);
        v_pools.emplace_back(layer_pool_bytes);
      }
      states = memory::RecurrentStates(spec, static_cast<int32_t>(state_slots));
    } catch (const std::bad_alloc&) {
      return OutOfMemory("contiguous kvcache: could not allocate " + std::to_string(total_bytes) +
                         " bytes of pools; lower max_sequences, max_context or prefix_snapshots");
    }
    memory::StateSnapshots snapshots(static_cast<int32_t>(snapshot_slots), snapshot_settings_.interval, states);

    layout_ = std::move(layout).value();
    context_ = static_cast<int32_t>(context);
    k_pools_ = std::move(k_pools);
    v_pools_ = std::move(v_pools);
    states_ = std::move(states);
    snapshots_ = std::move(snapshots);
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
    int32_t state_slot = -1;
    if (layout_.recurrent) {
      // Checkpoints share the state slots, so they can run out before the sequences do.
      const auto taken = states_.take();
      if (!taken) {
        slot_used_[static_cast<size_t>(slot)] = false;
        return Status(OutOfMemory("contiguous kvcache: every recurrent state slot is in use (checkpoints hold " +
                                  std::to_string(states_.used() - static_cast<int32_t>(sequences_.size())) + ")"));
      }
      state_slot = *taken;
    }
    const SeqId id = next_sequence_id();
    sequences_.emplace(id, Sequence{slot, 0, state_slot});
    return id;
  } catch (const std::exception& e) {
    return Status(Internal(std::string("contiguous kvcache: create_sequence: ") + e.what()));
  }
}

void ContiguousKvCache::release(SeqId seq) noexcept {
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return;  // releasing twice or an unknown id is harmless
  slot_used_[static_cast<size_t>(it->second.slot)] = false;
  if (it->second.state_slot >= 0) states_.give_back(it->second.state_slot);
  try {
    for (const memory::Checkpoint& c : checkpoints_.remove_all(seq))
      if (c.state_slot >= 0) states_.give_back(c.state_slot);
  } catch (...) {
    // remove_all moves a vector out: it does not allocate.
  }
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
    int32_t state_slot = -1;
    if (src.state_slot >= 0) {
      const auto taken = states_.take();
      if (!taken) {
        slot_used_[static_cast<size_t>(slot)] = false;
        return Status(OutOfMemory("contiguous kvcache: cannot fork " + seq_name(seq) +
                                  ": every recurrent state slot is in use"));
      }
      state_slot = *taken;
      states_.copy(src.state_slot, state_slot);
    }
    // Contiguous blocks cannot be shared, so the fork copies the live tokens of
    // every attention layer. Each block is [context, n_kv_head, head_dim] of dtype_.
    const size_t row_bytes = static_cast<size_t>(layout_.n_kv_head) * layout_.head_dim * kv_element_bytes(dtype_);
    const size_t block_bytes = static_cast<size_t>(context_) * row_bytes;
    const size_t live_bytes = static_cast<size_t>(src.length) * row_bytes;
    for (size_t l = 0; l < k_pools_.size(); ++l) {
      for (HostBuffer* pool : {&k_pools_[l], &v_pools_[l]}) {
        auto* base = pool->as<uint8_t>();
        std::memcpy(base + static_cast<size_t>(slot) * block_bytes,
                    base + static_cast<size_t>(src.slot) * block_bytes, live_bytes);
      }
    }
    const SeqId id = next_sequence_id();
    sequences_.emplace(id, Sequence{slot, src.length, state_slot});
    return id;
  } catch (const std::exception& e) {
    return Status(Internal(std::string("contiguous kvcache: fork: ") + e.what()));
  }
}

Status ContiguousKvCache::truncate(SeqId seq, int32_t new_length) noexcept {
  return guard([&]() -> Status {
    Sequence* s = find(seq);
    if (s == nullptr) return NotFound(seq_name(seq) + " does not exist");
    if (layout_.recurrent)
      return Unsupported(seq_name(seq) + ": a recurrent state cannot be truncated; restore a checkpoint instead");
    if (new_length < 0 || new_length > s->length) {
      return InvalidArgument(seq_name(seq) + ": cannot truncate to " + std::to_string(new_length) +
                             " tokens; it holds " + std::to_string(s->length));
    }
    s->length = new_length;
    checkpoints_.remove_longer(seq, new_length);  // their tokens are gone
    return Status::Ok();
  });
}

Result<CheckpointId> ContiguousKvCache::checkpoint(SeqId seq) noexcept {
  return guard([&]() -> Result<CheckpointId> {
    const Sequence* s = find(seq);
    if (s == nullptr) return NotFound(seq_name(seq) + " does not exist");
    int32_t state_slot = -1;
    if (s->state_slot >= 0) {
      const auto taken = states_.take();
      if (!taken) return OutOfMemory(seq_name(seq) + ": no recurrent state slot is free for a checkpoint");
      state_slot = *taken;
      states_.copy(s->state_slot, state_slot);
    }
    return checkpoints_.add(seq, s->length, state_slot);
  });
}

Status ContiguousKvCache::restore(SeqId seq, CheckpointId id) noexcept {
  return guard([&]() -> Status {
    Sequence* s = find(seq);
    if (s == nullptr) return NotFound(seq_name(seq) + " does not exist");
    const memory::Checkpoint* c = checkpoints_.find(seq, id);
    if (c == nullptr) return NotFound(seq_name(seq) + " has no checkpoint " + std::to_string(id));
    // K/V past the current length may have been overwritten: only a shorter
    // length can be returned to (a recurrent state is copied back whole).
    if (layout_.n_attention_layers > 0 && c->length > s->length)
      return InvalidArgument(seq_name(seq) + ": checkpoint " + std::to_string(id) + " is at " +
                             std::to_string(c->length) + " tokens, beyond its " + std::to_string(s->length));
    if (c->state_slot >= 0) states_.copy(c->state_slot, s->state_slot);
    s->length = c->length;
    return Status::Ok();
  });
}

void ContiguousKvCache::drop_checkpoint(SeqId seq, CheckpointId id) noexcept {
  const auto removed = checkpoints_.remove(seq, id);
  if (removed && removed->state_slot >= 0) states_.give_back(removed->state_slot);
}

int32_t ContiguousKvCache::reuse_prefix(SeqId seq, std::span<const int32_t> tokens) noexcept {
  Sequence* s = find(seq);
  if (s == nullptr || s->length != 0 || s->state_slot < 0) return 0;
  try {
    s->length = snapshots_.restore(tokens, states_, s->state_slot);
  } catch (...) {
    return 0;  // restore() copies nothing before its last allocation: no hit
  }
  prefix_hit_tokens_ += s->length;
  return s->length;
}

void ContiguousKvCache::record_tokens(SeqId seq, std::span<const int32_t> tokens) noexcept {
  const Sequence* s = find(seq);
  // The state follows exactly these tokens only when the sequence holds no
  // more (draft tokens not yet rolled back).
  if (s == nullptr || s->state_slot < 0 || tokens.size() != static_cast<size_t>(s->length)) return;
  try {
    snapshots_.record(tokens, states_, s->state_slot);
  } catch (...) {
    // A snapshot is an optimization; one not kept only costs a future hit.
  }
}

int32_t ContiguousKvCache::prefix_granularity() const noexcept {
  return snapshots_.enabled() ? snapshots_.interval() : 0;
}

RecurrentStateView ContiguousKvCache::state(SeqId seq, int32_t layer) noexcept {
  const Sequence* s = find(seq);
  if (s == nullptr || s->state_slot < 0) return {};
  return states_.view(s->state_slot, layer);
}

bool ContiguousKvCache::can_hold(std::span<const MemoryDemand> demands) const noexcept {
  if (!configured_) return false;
  // A sequence's block is its whole context, and its state slot is its own:
  // only new sequences need anything, a free block and a free state slot each.
  int64_t new_sequences = 0;
  for (const MemoryDemand& d : demands) {
    if (d.tokens > context_) return false;
    if (d.seq < 0) ++new_sequences;
  }
  const int64_t free_blocks = max_sequences_ - static_cast<int64_t>(sequences_.size());
  if (new_sequences > free_blocks) return false;
  return !layout_.recurrent || new_sequences <= states_.free();
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
  if (!configured_ || layer < 0 || layer >= layout_.n_layer()) return {};
  const int32_t pool = layout_.pool_of_layer[static_cast<size_t>(layer)];
  if (pool < 0) return {};
  KvLayerView view;
  view.block_size = context_;
  view.n_kv_head = layout_.n_kv_head;
  view.head_dim = layout_.head_dim;
  view.dtype = dtype_;
  view.k = k_pools_[static_cast<size_t>(pool)].data();
  view.v = v_pools_[static_cast<size_t>(pool)].data();
  return view;
}

MemoryStats ContiguousKvCache::stats() const noexcept {
  MemoryStats stats;
  if (!configured_) return stats;
  const uint64_t token_bytes = layout_.kv_bytes_per_token(kv_element_bytes(dtype_));
  const uint64_t block_bytes = static_cast<uint64_t>(context_) * token_bytes;
  uint64_t live_tokens = 0;
  for (const auto& [id, s] : sequences_) live_tokens += static_cast<uint64_t>(s.length);
  const uint64_t state_bytes = states_.slot_bytes();
  stats.blocks_total = max_sequences_;
  stats.blocks_used = static_cast<int64_t>(sequences_.size());
  stats.prefix_hit_tokens = prefix_hit_tokens_;
  // The state counts are the sequences' and checkpoints'; the bytes include
  // the snapshots' reserve (live: the snapshots held).
  stats.states_total = states_.total() - snapshots_.capacity();
  stats.states_used = states_.used() - snapshots_.capacity();
  stats.bytes_allocated = static_cast<uint64_t>(sequences_.size()) * block_bytes +
                          static_cast<uint64_t>(states_.used()) * state_bytes;
  stats.bytes_live = live_tokens * token_bytes +
                     static_cast<uint64_t>(states_.used() - snapshots_.idle_slots()) * state_bytes;
  stats.bytes_reserved = static_cast<uint64_t>(max_sequences_) * block_bytes +
                         static_cast<uint64_t>(states_.total()) * state_bytes;
  return stats;
}

}  // namespace tessera::plugins
