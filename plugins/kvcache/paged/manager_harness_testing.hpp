// A BlockManager wired to a tiny stand-in for K/V storage: each slot holds the
// token id written there, and copy-on-write copies those ids. Tests write a
// sequence's tokens through its block table and read them back the same way,
// so a shared block written by the wrong sequence, a missed copy or a reused
// block with the wrong content shows up as a wrong token.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "block_manager.hpp"

namespace tessera::plugins::paged::test {

struct CopyRecord {
  int32_t src, dst, rows;
};

struct ManagedBlocks {
  static constexpr int32_t kEmpty = -1;

  ManagedBlocks(int32_t n_blocks, int32_t block_size, int64_t max_sequences = 16, int64_t max_context = 0)
      : block_size(block_size), slots(static_cast<size_t>(n_blocks) * block_size, kEmpty) {
    BlockManagerLimits limits;
    limits.n_blocks = n_blocks;
    limits.block_size = block_size;
    limits.max_sequences = max_sequences;
    limits.max_context = max_context;
    manager = std::make_unique<BlockManager>(limits, [this](int32_t src, int32_t dst, int32_t rows) {
      copies.push_back({src, dst, rows});
      for (int32_t r = 0; r < rows; ++r) slot(dst, r) = slot(src, r);
    });
  }

  ManagedBlocks(const ManagedBlocks&) = delete;  // the copy hook points at this object
  ManagedBlocks& operator=(const ManagedBlocks&) = delete;

  int32_t& slot(int32_t block, int32_t row) { return slots[static_cast<size_t>(block) * block_size + row]; }

  // The slot of position `pos` of `seq`, through its block table.
  int32_t& at(SeqId seq, int32_t pos) {
    const auto table = manager->block_table(seq);
    return slot(table[static_cast<size_t>(pos / block_size)], pos % block_size);
  }

  // Appends `tokens` to `seq` and writes them into their slots, as a model would.
  Status append(SeqId seq, const std::vector<int32_t>& tokens) {
    const int32_t start = manager->length(seq);
    Status st = manager->append_slots(seq, static_cast<int32_t>(tokens.size()));
    if (!st.ok()) return st;
    for (size_t i = 0; i < tokens.size(); ++i) at(seq, start + static_cast<int32_t>(i)) = tokens[i];
    return st;
  }

  std::vector<int32_t> read(SeqId seq) {
    std::vector<int32_t> out;
    for (int32_t p = 0; p < manager->length(seq); ++p) out.push_back(at(seq, p));
    return out;
  }

  int32_t block_size;
  std::vector<int32_t> slots;  // [n_blocks, block_size] token ids
  std::vector<CopyRecord> copies;
  std::unique_ptr<BlockManager> manager;
};

inline std::vector<int32_t> iota_tokens(int32_t first, int32_t n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = first + i;
  return t;
}

}  // namespace tessera::plugins::paged::test
