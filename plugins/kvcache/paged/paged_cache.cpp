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
}

Status PagedKvCache::configure(const SequenceStateSpec& spec) noexcept {
  return guard([&]() -> Status {
    if (manager_) return InvalidArgument("paged kvcache: configure() called twice");
    if (spec.n_layer <= 0 || spec.n_kv_head <= 0 || spec.head_dim <= 0) {
      return InvalidArgument("paged kvcache: the model's state spec has no KV (n_layer " + std::to_string(spec.n_layer) +
                             ", n_kv_head " + std::to_string(spec.n_kv_head) + ", head_dim " +
                             std::to_string(spec.head_dim) + ")");
    }
    if (spec.fixed_bytes_per_sequence != 0) {
      return Unsupported("paged kvcache: the model needs " + std::to_string(spec.fixed_bytes_per_sequence) +
                         " bytes of fixed per-sequence state (e.g. Mamba), which this cache does not store");
    }
    // kv_bytes_per_token() and the block size, multiplied with overflow checks.
    uint64_t token_bytes = 2 * kv_element_bytes(dtype_);
    uint64_t block_bytes = 0;
    if (!checked_mul(token_bytes, static_cast<uint64_t>(spec.n_layer), &token_bytes) ||
        !checked_mul(token_bytes, static_cast<uint64_t>(spec.n_kv_head), &token_bytes) ||
        !checked_mul(token_bytes, static_cast<uint64_t>(spec.head_dim), &token_bytes) ||
        !checked_mul(token_bytes, static_cast<uint64_t>(block_size_), &block_bytes)) {
      return InvalidArgument("paged kvcache: KV bytes per block overflow 64 bits (n_layer " +
                             std::to_string(spec.n_layer) + ", n_kv_head " + std::to_string(spec.n_kv_head) +
                             ", head_dim " + std::to_string(spec.head_dim) + ")");
    }
    const uint64_t fitting = static_cast<uint64_t>(memory_) / block_bytes;
    if (fitting < 1) {
      return InvalidArgument("paged kvcache: memory " + format_bytes(static_cast<uint64_t>(memory_)) +
                             " cannot hold one block of " + std::to_string(block_size_) + " tokens (" +
                             std::to_string(block_bytes) + " bytes = " + std::to_string(block_size_) + " x " +
                             std::to_string(token_bytes) + " bytes per token); raise memory or lower block_size");
    }
    // Block ids are int32 (block tables are int32 spans).
    const auto n_blocks = static_cast<int32_t>(std::min<uint64_t>(fitting, std::numeric_limits<int32_t>::max()));

    std::unique_ptr<paged::BlockStorage> storage;
    try {
      storage = std::make_unique<paged::BlockStorage>(spec, n_blocks, block_size_, dtype_);
    } catch (const std::bad_alloc&) {
      return OutOfMemory("paged kvcache: could not allocate " + format_bytes(n_blocks * block_bytes) + " for " +
                         std::to_string(n_blocks) + " blocks; lower memory");
    }
    paged::BlockManagerLimits limits;
    limits.n_blocks = n_blocks;
    limits.block_size = block_size_;
    limits.max_sequences = max_sequences_;
    limits.max_context = spec.max_context;
    paged::BlockStorage* pools = storage.get();
    manager_ = std::make_unique<paged::BlockManager>(
        limits, [pools](int32_t src, int32_t dst, int32_t rows) { pools->copy_rows(src, dst, rows); });
    storage_ = std::move(storage);
    spec_ = spec;
    block_bytes_ = block_bytes;
    return Status::Ok();
  });
}

Status PagedKvCache::not_configured(const char* call) const {
  return InvalidArgument(std::string("paged kvcache: ") + call + " before configure()");
}

Result<SeqId> PagedKvCache::create_sequence() noexcept {
  try {
    if (!manager_) return not_configured("create_sequence()");
    return manager_->create_sequence();
  } catch (const std::exception& e) {
    return Status(Internal(std::string("paged kvcache: create_sequence: ") + e.what()));
  }
}

void PagedKvCache::release(SeqId seq) noexcept {
  if (!manager_) return;
  try {
    manager_->release(seq);
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
  try {
    if (!manager_) return not_configured("fork()");
    return manager_->fork(seq);
  } catch (const std::exception& e) {
    return Status(Internal(std::string("paged kvcache: fork: ") + e.what()));
  }
}

Status PagedKvCache::truncate(SeqId seq, int32_t new_length) noexcept {
  return guard([&]() -> Status {
    if (!manager_) return not_configured("truncate()");
    return manager_->truncate(seq, new_length);
  });
}

int32_t PagedKvCache::length(SeqId seq) const noexcept { return manager_ ? manager_->length(seq) : 0; }

std::span<const int32_t> PagedKvCache::block_table(SeqId seq) const noexcept {
  return manager_ ? manager_->block_table(seq) : std::span<const int32_t>{};
}

KvLayerView PagedKvCache::layer(int32_t layer) noexcept { return storage_ ? storage_->view(layer) : KvLayerView{}; }

KvStats PagedKvCache::stats() const noexcept {
  KvStats stats;
  if (!manager_) return stats;
  const paged::BlockPool& pool = manager_->pool();
  stats.blocks_total = pool.total();
  stats.blocks_used = pool.used_count();
  stats.bytes_reserved = static_cast<uint64_t>(pool.total()) * block_bytes_;
  stats.bytes_allocated = static_cast<uint64_t>(pool.used_count()) * block_bytes_;
  stats.prefix_hit_tokens = manager_->prefix_hit_tokens();
  try {
    stats.bytes_live = static_cast<uint64_t>(manager_->live_tokens()) * spec_.kv_bytes_per_token(kv_element_bytes(dtype_));
  } catch (...) {
    // live_tokens() needs one int per block; without it the figure stays 0.
  }
  return stats;
}

int32_t PagedKvCache::reuse_prefix(SeqId seq, std::span<const int32_t> tokens) noexcept {
  if (!manager_) return 0;
  try {
    return manager_->reuse_prefix(seq, tokens);
  } catch (...) {
    return 0;  // reuse_prefix changes nothing before its last allocation, so "no hit" is true
  }
}

void PagedKvCache::record_tokens(SeqId seq, std::span<const int32_t> tokens) noexcept {
  if (!manager_) return;
  try {
    manager_->record_tokens(seq, tokens);
  } catch (...) {
    // Publishing is an optimization; a failed publish only costs a future hit.
  }
}

}  // namespace tessera::plugins
