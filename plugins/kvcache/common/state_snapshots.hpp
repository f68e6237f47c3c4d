// state_snapshots.hpp: the prefix cache of a recurrent model.
//
// A Transformer's prefix cache reuses the K/V rows of a shared prompt
// prefix. A recurrent layer keeps no rows, only the state after its last
// token, so what can be reused is that state at a position where a new
// prompt agrees with an earlier sequence. Every `interval` tokens of a
// sequence (the engine ends prefill chunks on those positions:
// SequenceMemory::prefix_granularity), its state is copied into a snapshot
// slot keyed by the chained SHA-256 of the tokens before it (block_key.hpp,
// blocks of `interval` tokens); a new sequence whose prompt starts with those
// tokens starts from a copy of the longest such snapshot. At most `capacity`
// snapshots are held, the least recently used given up first.
//
// The snapshot is the state itself, so a sequence continued from one computes
// exactly what it would have from the start (the recurrent kernels give the
// same bits however a sequence's tokens arrive).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "block_key.hpp"
#include "recurrent_states.hpp"
#include "tessera/params.hpp"

namespace tessera::plugins::memory {

// The two parameters every in-tree memory plugin declares for them.
inline constexpr ParamSpec kPrefixSnapshotsParam =
    param_int("prefix_snapshots", "8", 0, 65536,
              "recurrent models: states kept for reuse by later prompts that share their first tokens (prefix "
              "cache); 0 = none");
inline constexpr ParamSpec kSnapshotIntervalParam =
    param_int("snapshot_interval", "256", 16, 1048576,
              "recurrent models: tokens between snapshots; a prompt's prefill chunks end on its multiples");

struct SnapshotSettings {
  int32_t capacity = 8;
  int32_t interval = 256;
};
// The parameters' values (defaults where absent); std::invalid_argument
// naming `plugin` when out of range (a host that skipped the core's checks).
SnapshotSettings snapshot_settings(const ParamValues& params, const std::string& plugin);

class StateSnapshots {
 public:
  StateSnapshots() = default;  // off
  // Reserves `capacity` slots of `states` (0 = off) for snapshots every
  // `interval` tokens (>= 1), so that sequences and checkpoints never wait
  // for a snapshot's slot. Throws std::invalid_argument when `states` has
  // fewer free slots.
  StateSnapshots(int32_t capacity, int32_t interval, RecurrentStates& states);

  bool enabled() const { return capacity_ > 0; }
  int32_t interval() const { return interval_; }
  int32_t capacity() const { return capacity_; }
  int32_t size() const { return static_cast<int32_t>(by_key_.size()); }
  // Reserved slots holding no snapshot yet.
  int32_t idle_slots() const { return static_cast<int32_t>(idle_.size()); }

  // The state in `slot` of `states` follows exactly `tokens`: kept when
  // tokens.size() is a positive multiple of the interval and no snapshot of
  // these tokens is held yet, in an idle reserved slot or else the least
  // recently used snapshot's. Throws std::bad_alloc / std::runtime_error
  // (hashing, the index).
  void record(std::span<const int32_t> tokens, RecurrentStates& states, int32_t slot);

  // The snapshot of the longest prefix of `tokens` held, shorter than
  // `tokens` (its last token must still be computed for its logits): that
  // prefix's length and the snapshot's slot, or {0, -1}. Counts as a use.
  // Throws like record().
  struct Hit {
    int32_t length = 0;
    int32_t slot = -1;
  };
  Hit find(std::span<const int32_t> tokens);
  // find(), then the snapshot copied into `slot` of `states`; returns the length.
  int32_t restore(std::span<const int32_t> tokens, RecurrentStates& states, int32_t slot);

  // Forgets every snapshot (their slots stay reserved).
  void clear();

 private:
  struct Snapshot {
    int32_t slot = -1;
    uint64_t last_used = 0;
  };
  int32_t capacity_ = 0;
  int32_t interval_ = 1;
  uint64_t clock_ = 0;  // advanced by every record/restore that touches a snapshot
  std::unordered_map<BlockKey, Snapshot, BlockKeyHash> by_key_;
  std::vector<int32_t> idle_;  // reserved slots without a snapshot
};

}  // namespace tessera::plugins::memory
