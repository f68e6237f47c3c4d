#include "paged_cache.hpp"

#include <algorithm>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>

namespace tessera::plugins {
namespace {

// "512MiB", "1KiB" or "1000 bytes": as a user would have written it.
std::string format_bytes(uint64_t bytes) {
  constexpr const char* kUnits[] = {"GiB", "MiB", "KiB"};
  constexpr uint64_t kScales[] = {1ull << 30, 1ull << 20, 1ull << 10};
  for (int i = 0; i < 3; ++i) {
    if (bytes >= kScales[i] && bytes % kScales[i] == 0) return std::to_string(bytes / kScales[i]) + kUnits[i];
  }
  return std::to_string(bytes) + " bytes";
}

bool checked_mul(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }

}  // namespace

PagedKvCache::PagedKvCache(const ParamValues& params)
    : memory_(params.get_int("memory")), max_sequences_(params.get_int("max_sequences")) {
  // The core validates against the declared ranges; these guard direct construction.
  const int64_t block_size = params.get_int("block_size");
  if (block_size < 1 || block_size > 4096) {
    throw std::invalid_argument("paged kvcache: block_size must be in [1, 4096], got " + std::to_string(block_size));
  }
  block_size_ = static_cast<int32_t>(block_size);
  if (memory_ < 1) throw std::invalid_argument("paged kvcache: memory must be positive, got " + std::to_string(memory_));
  if (max_sequences_ < 1 || max_sequences_ > std::numeric_limits<int32_t>::max()) {
    throw std::invalid_argument("paged kvcache: max_sequences must be in [1, 2^31), got " +
                                std::to_string(max_sequences_));
  }
  const std::string dtype = params.has("dtype") ? params.get_string("dtype") : "f32";
  if (!parse_kv_dtype(dtype, &dtype_)) {
    throw std::invalid_argument("paged kvcache: dtype must be f32 or f16, got '" + dtype + "'");
  }
  checkpoint_slots_ = params.has("checkpoints") ? params.get_int("checkpoints") : 0;
  if (checkpoint_slots_ < 0 || checkpoint_slots_ > std::numeric_limits<int32_t>::max() - max_sequences_)
    throw std::invalid_argument("paged kvcache: checkpoints must be in [0, 2^31 - max_sequences)");
  if (checkpoint_slots_ == 0) checkpoint_slots_ = max_sequences_;
  snapshot_settings_ = memory::snapshot_settings(params, "paged kvcache");
}

Status PagedKvCache::configure(const SequenceStateSpec& spec) noexcept {
  return guard([&]() -> Status {
    if (manager_) return InvalidArgument("paged kvcache: configure() called twice");
    auto layout = memory::MemoryLayout::of(spec, "paged kvcache");
    if (!layout.ok()) return layout.status();

    // Recurrent state slots come out of `memory` first: half of it when the
    // model also has attention layers, all of it otherwise.
    uint64_t memory_left = static_cast<uint64_t>(memory_);
    // Snapshots (all-recurrent models only) get the slots the memory holds
    // beyond what the sequences and their checkpoints may take.
    int64_t state_slots = 0, snapshot_slots = 0;
    const uint64_t slot_bytes = spec.state_bytes_per_sequence();
    if (layout->recurrent) {
      const uint64_t budget = layout->n_attention_layers > 0 ? memory_left / 2 : memory_left;
      const int64_t wanted = layout->n_attention_layers == 0 ? snapshot_settings_.capacity : 0;
      state_slots = std::min<int64_t>({max_sequences_ + checkpoint_slots_ + wanted,
                                       static_cast<int64_t>(budget / slot_bytes),
                                       std::numeric_limits<int32_t>::max()});  // slot ids are int32
      if (state_slots < 1) {
        return InvalidArgument("paged kvcache: memory " + format_bytes(static_cast<uint64_t>(memory_)) +
                               " cannot hold one recurrent state of " + std::to_string(slot_bytes) +
                               " bytes; raise memory");
      }
      snapshot_slots = std::max<int64_t>(0, state_slots - max_sequences_ - checkpoint_slots_);
      memory_left -= static_cast<uint64_t>(state_slots) * slot_bytes;
    }

    // A model without attention layers keeps no K/V: its blocks only count
    // tokens (no bytes), enough for every sequence at the whole context.
    int64_t n_blocks = std::min<int64_t>(max_sequences_ * ((spec.max_context + block_size_ - 1) / block_size_),
                                         int64_t{1} << 22);
    uint64_t block_bytes = 0;
    if (layout->n_attention_layers > 0) {
      // kv_bytes_per_token() and the block size, multiplied with overflow checks.
      uint64_t token_bytes = 2 * kv_element_bytes(dtype_);
      if (!checked_mul(token_bytes, static_cast<uint64_t>(layout->n_attention_layers), &token_bytes) ||
          !checked_mul(token_bytes, static_cast<uint64_t>(layout->n_kv_head), &token_bytes) ||
          !checked_mul(token_bytes, static_cast<uint64_t>(layout->head_dim), &token_bytes) ||
          !checked_mul(token_bytes, static_cast<uint64_t>(block_size_), &block_bytes)) {
        return InvalidArgument("paged kvcache: KV bytes per block overflow 64 bits (" +
                               std::to_string(layout->n_attention_layers) + " attention layers, n_kv_head " +
                               std::to_string(layout->n_kv_head) + ", head_dim " + std::to_string(layout->head_dim) +
                               ")");
      }
      const uint64_t fitting = memory_left / block_bytes;
      if (fitting < 1) {
        return InvalidArgument("paged kvcache: memory " + format_bytes(static_cast<uint64_t>(memory_)) +
                               " cannot hold one block of " + std::to_string(block_size_) + " tokens (" +
                               std::to_string(block_bytes) + " bytes = " + std::to_string(block_size_) + " x " +
                               std::to_string(token_bytes) + " bytes per token); raise memory or lower block_size");
      }
      // Block ids are int32 (block tables are int32 spans).
      n_blocks = static_cast<int64_t>(std::min<uint64_t>(fitting, std::numeric_limits<int32_t>::max()));
    }

    std::unique_ptr<paged::BlockStorage> storage;
    memory::RecurrentStates states;
    try {
      storage = std::make_unique<paged::BlockStorage>(layout->n_attention_layers, layout->n_kv_head,
                                                      layout->head_dim, static_cast<int32_t>(n_blocks), block_size_,
                                                      dtype_);
      states = memory::RecurrentStates(spec, static_cast<int32_t>(state_slots));
    } catch (const std::bad_alloc&) {
      return OutOfMemory("paged kvcache: could not allocate " + format_bytes(n_blocks * block_bytes) + " for " +
                         std::to_string(n_blocks) + " blocks and " + std::to_string(state_slots) +
                         " recurrent states; lower memory");
    }
    paged::BlockManagerLimits limits;
    limits.n_blocks = static_cast<int32_t>(n_blocks);
    limits.block_size = block_size_;
    limits.max_sequences = max_sequences_;
    limits.max_context = spec.max_context;
    // Everything that can fail before the first member is set: a failed
    // configure() leaves the cache unconfigured.
    memory::StateSnapshots snapshots(static_cast<int32_t>(snapshot_slots), snapshot_settings_.interval, states);
    paged::BlockStorage* pools = storage.get();
    auto manager = std::make_unique<paged::BlockManager>(
        limits, [pools](int32_t src, int32_t dst, int32_t rows) { pools->copy_rows(src, dst, rows); });
    manager_ = std::move(manager);
    storage_ = std::move(storage);
    states_ = std::move(states);
    snapshots_ = std::move(snapshots);
    layout_ = std::move(layout).value();
    max_context_ = spec.max_context;
    block_bytes_ = block_bytes;
    return Status::Ok();
  });
}

Status PagedKvCache::not_configured(const char* call) const {
  return InvalidArgument(std::string("paged kvcache: ") + call + " before configure()");
}

Result<SeqId> PagedKvCache::create_sequence() noexcept {
  return guard([&]() -> Result<SeqId> {
    if (!manager_) return not_configured("create_sequence()");
    std::optional<int32_t> slot;
    if (layout_.recurrent) {
      slot = states_.take();
      if (!slot) return OutOfMemory("paged kvcache: every recurrent state slot is in use");
    }
    auto seq = manager_->create_sequence();
    if (!seq.ok()) {
      if (slot) states_.give_back(*slot);
      return seq;
    }
    if (slot) state_slot_[*seq] = *slot;
    return seq;
  });
}

void PagedKvCache::release(SeqId seq) noexcept {
  if (!manager_) return;
  try {
    manager_->release(seq);
    if (auto it = state_slot_.find(seq); it != state_slot_.end()) {
      states_.give_back(it->second);
      state_slot_.erase(it);
    }
    for (const memory::Checkpoint& c : checkpoints_.remove_all(seq))
      if (c.state_slot >= 0) states_.give_back(c.state_slot);
  } catch (...) {
    // Only a broken invariant (a double free) can throw here; release() has
    // no way to report it, and the sequence is gone either way.
  }
}

Status PagedKvCache::append_slots(SeqId seq, int32_t n) noexcept {
  return guard([&]() -> Status {
    if (!manager_) return not_configured("append_slots()");
    return manager_->append_slots(seq, n);
  });
}

Result<SeqId> PagedKvCache::fork(SeqId seq) noexcept {
  return guard([&]() -> Result<SeqId> {
    if (!manager_) return not_configured("fork()");
    std::optional<int32_t> slot;
    const auto source = state_slot_.find(seq);
    if (source != state_slot_.end()) {
      slot = states_.take();
      if (!slot) return OutOfMemory("paged kvcache: cannot fork: every recurrent state slot is in use");
    }
    auto forked = manager_->fork(seq);
    if (!forked.ok()) {
      if (slot) states_.give_back(*slot);
      return forked;
    }
    if (slot) {
      states_.copy(source->second, *slot);
      state_slot_[*forked] = *slot;
    }
    return forked;
  });
}

Status PagedKvCache::truncate(SeqId seq, int32_t new_length) noexcept {
  return guard([&]() -> Status {
    if (!manager_) return not_configured("truncate()");
    if (layout_.recurrent)
      return Unsupported("paged kvcache: a recurrent state cannot be truncated; restore a checkpoint instead");
    TESSERA_RETURN_IF_ERROR(manager_->truncate(seq, new_length));
    checkpoints_.remove_longer(seq, new_length);  // their tokens are gone
    return Status::Ok();
  });
}

Result<CheckpointId> PagedKvCache::checkpoint(SeqId seq) noexcept {
  return guard([&]() -> Result<CheckpointId> {
    if (!manager_) return not_configured("checkpoint()");
    if (!manager_->contains(seq))
      return NotFound("paged kvcache: sequence " + std::to_string(seq) + " does not exist");
    int32_t slot = -1;
    if (const auto own = state_slot_.find(seq); own != state_slot_.end()) {
      const auto taken = states_.take();
      if (!taken) return OutOfMemory("paged kvcache: no recurrent state slot is free for a checkpoint");
      slot = *taken;
      states_.copy(own->second, slot);
    }
    return checkpoints_.add(seq, manager_->length(seq), slot);
  });
}

Status PagedKvCache::restore(SeqId seq, CheckpointId id) noexcept {
  return guard([&]() -> Status {
    if (!manager_) return not_configured("restore()");
    if (!manager_->contains(seq))
      return NotFound("paged kvcache: sequence " + std::to_string(seq) + " does not exist");
    const memory::Checkpoint* c = checkpoints_.find(seq, id);
    if (c == nullptr)
      return NotFound("paged kvcache: sequence " + std::to_string(seq) + " has no checkpoint " + std::to_string(id));
    const int32_t length = manager_->length(seq);
    if (layout_.n_attention_layers > 0 && c->length > length)
      return InvalidArgument("paged kvcache: sequence " + std::to_string(seq) + ": checkpoint " + std::to_string(id) +
                             " is at " + std::to_string(c->length) + " tokens, beyond its " + std::to_string(length));
    if (c->length < length) TESSERA_RETURN_IF_ERROR(manager_->truncate(seq, c->length));
    if (c->length > length) TESSERA_RETURN_IF_ERROR(manager_->append_slots(seq, c->length - length));
    if (c->state_slot >= 0) states_.copy(c->state_slot, state_slot_.at(seq));
    return Status::Ok();
  });
}

void PagedKvCache::drop_checkpoint(SeqId seq, CheckpointId id) noexcept {
  const auto removed = checkpoints_.remove(seq, id);
  if (removed && removed->state_slot >= 0) states_.give_back(removed->state_slot);
}

RecurrentStateView PagedKvCache::state(SeqId seq, int32_t layer) noexcept {
  const auto it = state_slot_.find(seq);
  return it == state_slot_.end() ? RecurrentStateView{} : states_.view(it->second, layer);
}

int64_t PagedKvCache::max_sequence_tokens() const noexcept {
  if (!manager_) return 0;
  if (layout_.n_attention_layers == 0) return max_context_;
  return std::min<int64_t>(max_context_, static_cast<int64_t>(manager_->pool().total()) * block_size_);
}

bool PagedKvCache::can_hold(std::span<const MemoryDemand> demands) const noexcept {
  if (!manager_) return false;
  // Free blocks must cover what every sequence may still grow to: its blocks
  // for `tokens` beyond those it holds (a new one holds none).
  int64_t free_blocks = manager_->pool().total() - manager_->pool().used_count();
  int64_t new_sequences = 0;
  for (const MemoryDemand& d : demands) {
    if (d.tokens > max_sequence_tokens()) return false;
    const int64_t held = d.seq < 0 ? 0 : static_cast<int64_t>(manager_->block_table(d.seq).size());
    if (layout_.n_attention_layers > 0) free_blocks -= std::max<int64_t>(0, (d.tokens + block_size_ - 1) / block_size_ - held);
    if (d.seq < 0) ++new_sequences;
  }
  if (free_blocks < 0) return false;
  if (manager_->sequence_count() + new_sequences > max_sequences_) return false;
  return !layout_.recurrent || new_sequences <= states_.free();
}

int32_t PagedKvCache::length(SeqId seq) const noexcept { return manager_ ? manager_->length(seq) : 0; }

std::span<const int32_t> PagedKvCache::block_table(SeqId seq) const noexcept {
  return manager_ ? manager_->block_table(seq) : std::span<const int32_t>{};
}

KvLayerView PagedKvCache::layer(int32_t layer) noexcept {
  if (!storage_ || layer < 0 || layer >= layout_.n_layer()) return {};
  return storage_->view(layout_.pool_of_layer[static_cast<size_t>(layer)]);
}

MemoryStats PagedKvCache::stats() const noexcept {
  MemoryStats stats;
  if (!manager_) return stats;
  const paged::BlockPool& pool = manager_->pool();
  const uint64_t state_bytes = states_.slot_bytes();
  if (layout_.n_attention_layers > 0) {  // otherwise the blocks only count tokens
    stats.blocks_total = pool.total();
    stats.blocks_used = pool.used_count();
  }
  // The state counts are the sequences' and checkpoints'; the bytes include
  // the snapshots' reserve (live: the snapshots held).
  stats.states_total = states_.total() - snapshots_.capacity();
  stats.states_used = states_.used() - snapshots_.capacity();
  stats.bytes_reserved = static_cast<uint64_t>(pool.total()) * block_bytes_ +
                         static_cast<uint64_t>(states_.total()) * state_bytes;
  stats.bytes_allocated = static_cast<uint64_t>(pool.used_count()) * block_bytes_ +
                          static_cast<uint64_t>(states_.used()) * state_bytes;
  stats.prefix_hit_tokens = manager_->prefix_hit_tokens() + snapshot_hit_tokens_;
  try {
    stats.bytes_live = static_cast<uint64_t>(manager_->live_tokens()) * layout_.kv_bytes_per_token(kv_element_bytes(dtype_)) +
                       static_cast<uint64_t>(states_.used() - snapshots_.idle_slots()) * state_bytes;
  } catch (...) {
    // live_tokens() needs one int per block; without it the figure stays 0.
  }
  return stats;
}

int32_t PagedKvCache::reuse_prefix(SeqId seq, std::span<const int32_t> tokens) noexcept {
  if (!manager_) return 0;
  try {
    if (!layout_.recurrent) return manager_->reuse_prefix(seq, tokens);
    // An all-recurrent model: the state snapshot of a shared prefix (none
    // for a model with attention layers too).
    const auto own = state_slot_.find(seq);
    if (own == state_slot_.end() || manager_->length(seq) != 0) return 0;
    const memory::StateSnapshots::Hit hit = snapshots_.find(tokens);
    if (hit.length == 0 || !manager_->append_slots(seq, hit.length).ok()) return 0;
    states_.copy(hit.slot, own->second);
    snapshot_hit_tokens_ += hit.length;
    return hit.length;
  } catch (...) {
    return 0;  // nothing changes before the last step that can fail, so "no hit" is true
  }
}

void PagedKvCache::record_tokens(SeqId seq, std::span<const int32_t> tokens) noexcept {
  if (!manager_) return;
  try {
    if (!layout_.recurrent) return manager_->record_tokens(seq, tokens);
    // The state follows exactly these tokens only when the sequence holds no
    // more (draft tokens not yet rolled back).
    const auto own = state_slot_.find(seq);
    if (own != state_slot_.end() && tokens.size() == static_cast<size_t>(manager_->length(seq)))
      snapshots_.record(tokens, states_, own->second);
  } catch (...) {
    // Publishing is an optimization; a failed publish only costs a future hit.
  }
}

int32_t PagedKvCache::prefix_granularity() const noexcept {
  return snapshots_.enabled() ? snapshots_.interval() : 0;
}

}  // namespace tessera::plugins
