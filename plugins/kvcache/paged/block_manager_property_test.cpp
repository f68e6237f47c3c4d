// Random operation sequences (fixed seeds) against a simple model of what each
// sequence holds. After every step: every sequence reads back exactly its
// tokens through its block table (so copy-on-write, truncation and prefix
// reuse never hand a sequence someone else's or stale K/V), reference counts
// equal the number of tables holding each block, the free list holds exactly
// the unreferenced blocks (no leak, no double free), free + used == total, a
// cached block's content never changes while it keeps its key, and the
// prefix-hit counter adds up.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "manager_harness_testing.hpp"

namespace tessera::plugins::paged {
namespace {

using test::ManagedBlocks;
using Tokens = std::vector<int32_t>;

struct Config {
  int32_t n_blocks;
  int32_t block_size;
  int32_t vocab;  // small, so that prompts share prefixes and the cache hits
  uint32_t seed;
};

class PropertyRun {
 public:
  explicit PropertyRun(const Config& c)
      : c_(c), m_(c.n_blocks, c.block_size, /*max_sequences=*/6), rng_(c.seed) {}

  void run(int steps) {
    for (step_ = 0; step_ < steps; ++step_) {
      switch (pick(0, 9)) {
        case 0: create(); break;
        case 1: case 2: append(); break;
        case 3: fork(); break;
        case 4: truncate(); break;
        case 5: record(); break;
        case 6: case 7: reuse(); break;
        default: release(); break;
      }
      check();
      if (::testing::Test::HasFailure()) {
        ADD_FAILURE() << "seed " << c_.seed << ", step " << step_ << ": " << last_op_;
        return;
      }
    }
    EXPECT_GT(hits_, 0) << "the run never exercised a prefix-cache hit";
    // Blocks of one token are never partially filled, so they never need copying.
    if (c_.block_size > 1) {
      EXPECT_GT(m_.copies.size(), 0u) << "the run never exercised copy-on-write";
    }
    EXPECT_GT(out_of_memory_, 0) << "the run never ran out of blocks";
  }

 private:
  int32_t pick(int32_t lo, int32_t hi) { return std::uniform_int_distribution<int32_t>(lo, hi)(rng_); }
  Tokens random_tokens(int32_t n) {
    Tokens t(static_cast<size_t>(n));
    for (int32_t& x : t) x = pick(0, c_.vocab - 1);
    return t;
  }
  bool any_seq(SeqId* out) {
    if (model_.empty()) return false;
    auto it = model_.begin();
    std::advance(it, pick(0, static_cast<int32_t>(model_.size()) - 1));
    *out = it->first;
    return true;
  }

  // Appends through the harness; on out_of_memory the sequence must be unchanged.
  void append_to(SeqId seq, const Tokens& tokens) {
    const auto before = m_.manager->block_table(seq);
    const Tokens table(before.begin(), before.end());
    const size_t copies = m_.copies.size();
    const Status st = m_.append(seq, tokens);
    if (st.ok()) {
      Tokens& held = model_[seq];
      held.insert(held.end(), tokens.begin(), tokens.end());
      return;
    }
    ASSERT_EQ(st.code(), StatusCode::out_of_memory) << st.message();
    ++out_of_memory_;
    const auto after = m_.manager->block_table(seq);
    EXPECT_EQ(Tokens(after.begin(), after.end()), table);
    EXPECT_EQ(m_.manager->length(seq), static_cast<int32_t>(model_[seq].size()));
    EXPECT_EQ(m_.copies.size(), copies);
  }

  void create() {
    last_op_ = "create";
    auto id = m_.manager->create_sequence();
    if (!id.ok()) {
      EXPECT_EQ(id.status().code(), StatusCode::out_of_memory);
      EXPECT_EQ(model_.size(), 6u);
      return;
    }
    model_[*id] = {};
    append_to(*id, random_tokens(pick(0, 3 * c_.block_size)));
  }
  void append() {
    SeqId s;
    if (!any_seq(&s)) return;
    last_op_ = "append to " + std::to_string(s);
    append_to(s, random_tokens(pick(1, 2 * c_.block_size)));
  }
  void fork() {
    SeqId s;
    if (!any_seq(&s)) return;
    last_op_ = "fork " + std::to_string(s);
    auto id = m_.manager->fork(s);
    if (!id.ok()) {
      EXPECT_EQ(id.status().code(), StatusCode::out_of_memory);
      return;
    }
    model_[*id] = model_[s];
  }
  void truncate() {
    SeqId s;
    if (!any_seq(&s)) return;
    const int32_t len = pick(0, static_cast<int32_t>(model_[s].size()));
    last_op_ = "truncate " + std::to_string(s) + " to " + std::to_string(len);
    ASSERT_TRUE(m_.manager->truncate(s, len).ok());
    model_[s].resize(static_cast<size_t>(len));
  }
  void record() {
    SeqId s;
    if (!any_seq(&s)) return;
    last_op_ = "record " + std::to_string(s);
    Tokens tokens = model_[s];
    history_.push_back(tokens);
    // Sometimes more tokens than slots (the engine knows its next token early): the extra are ignored.
    if (pick(0, 3) == 0) {
      const Tokens extra = random_tokens(pick(1, c_.block_size));
      tokens.insert(tokens.end(), extra.begin(), extra.end());
    }
    m_.manager->record_tokens(s, tokens);
  }
  void reuse() {
    if (history_.empty()) return;
    auto id = m_.manager->create_sequence();
    if (!id.ok()) return;
    last_op_ = "reuse into " + std::to_string(*id);
    const Tokens& seen = history_[static_cast<size_t>(pick(0, static_cast<int32_t>(history_.size()) - 1))];
    Tokens prompt(seen.begin(), seen.begin() + pick(0, static_cast<int32_t>(seen.size())));
    const Tokens tail = random_tokens(pick(0, 2 * c_.block_size));
    prompt.insert(prompt.end(), tail.begin(), tail.end());

    const int32_t hit = m_.manager->reuse_prefix(*id, prompt);
    const int32_t cap = prompt.empty() ? 0 : static_cast<int32_t>((prompt.size() - 1) / c_.block_size) * c_.block_size;
    EXPECT_EQ(hit % c_.block_size, 0);
    EXPECT_LE(hit, cap) << "the block holding the last prompt token is never reused";
    hits_ += hit;
    model_[*id] = Tokens(prompt.begin(), prompt.begin() + hit);
    // The content check in check() proves the reused blocks hold prompt[0, hit).
    append_to(*id, Tokens(prompt.begin() + hit, prompt.end()));
  }
  void release() {
    SeqId s;
    if (!any_seq(&s)) return;
    last_op_ = "release " + std::to_string(s);
    m_.manager->release(s);
    model_.erase(s);
  }

  void check() {
    const BlockPool& pool = m_.manager->pool();
    const int32_t B = c_.block_size;
    std::vector<int32_t> holders(static_cast<size_t>(pool.total()), 0);
    std::vector<int32_t> filled(static_cast<size_t>(pool.total()), 0);
    ASSERT_EQ(m_.manager->sequence_count(), static_cast<int64_t>(model_.size()));
    for (const auto& [seq, tokens] : model_) {
      ASSERT_EQ(m_.manager->length(seq), static_cast<int32_t>(tokens.size())) << "sequence " << seq;
      const auto table = m_.manager->block_table(seq);
      ASSERT_EQ(table.size(), (tokens.size() + B - 1) / B) << "sequence " << seq;
      std::vector<int32_t> sorted(table.begin(), table.end());
      std::sort(sorted.begin(), sorted.end());
      ASSERT_TRUE(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end()) << "a block twice in one table";
      for (size_t b = 0; b < table.size(); ++b) {
        ASSERT_GE(table[b], 0);
        ASSERT_LT(table[b], pool.total());
        ++holders[static_cast<size_t>(table[b])];
        const int32_t rows = std::min<int32_t>(B, static_cast<int32_t>(tokens.size()) - static_cast<int32_t>(b) * B);
        filled[static_cast<size_t>(table[b])] = std::max(filled[static_cast<size_t>(table[b])], rows);
      }
      ASSERT_EQ(m_.read(seq), tokens) << "sequence " << seq << " reads back someone else's or stale tokens";
    }
    std::vector<int32_t> unreferenced;
    int64_t live = 0;
    for (int32_t b = 0; b < pool.total(); ++b) {
      ASSERT_EQ(pool.ref_count(b), holders[static_cast<size_t>(b)]) << "block " << b;
      if (holders[static_cast<size_t>(b)] == 0) unreferenced.push_back(b);
      live += filled[static_cast<size_t>(b)];
    }
    std::vector<int32_t> free_list = pool.free_list();
    std::sort(free_list.begin(), free_list.end());
    ASSERT_EQ(free_list, unreferenced) << "the free list must hold exactly the unreferenced blocks";
    ASSERT_EQ(pool.free_count(), static_cast<int32_t>(unreferenced.size()));
    ASSERT_EQ(pool.free_count() + pool.used_count(), pool.total());
    ASSERT_EQ(m_.manager->live_tokens(), live);
    ASSERT_EQ(m_.manager->prefix_hit_tokens(), hits_);

    // A block keeps its key only while its content stays what was published.
    for (int32_t b = 0; b < pool.total(); ++b) {
      if (!pool.has_key(b)) {
        published_.erase(b);
        continue;
      }
      const Tokens content(m_.slots.begin() + static_cast<std::ptrdiff_t>(b) * B,
                           m_.slots.begin() + static_cast<std::ptrdiff_t>(b + 1) * B);
      auto [it, fresh] = published_.emplace(b, content);
      if (!fresh) {
        ASSERT_EQ(it->second, content) << "cached block " << b << " was overwritten but kept its key";
      }
    }
  }

  Config c_;
  ManagedBlocks m_;
  std::mt19937 rng_;
  std::map<SeqId, Tokens> model_;      // what each live sequence holds
  std::vector<Tokens> history_;         // token lists recorded so far: prompts to reuse
  std::map<int32_t, Tokens> published_;  // content of each keyed block when first seen keyed
  int64_t hits_ = 0;
  int32_t out_of_memory_ = 0;
  int step_ = 0;
  std::string last_op_;
};

TEST(BlockManagerProperty, RandomOperationsKeepEveryInvariant) {
  const Config configs[] = {
      {12, 1, 2, 1},
      {10, 3, 2, 2},
      {24, 4, 3, 3},
      {16, 2, 2, 4},
      {20, 5, 2, 5},
  };
  for (const Config& c : configs) {
    SCOPED_TRACE("block_size " + std::to_string(c.block_size) + ", " + std::to_string(c.n_blocks) + " blocks, seed " +
                 std::to_string(c.seed));
    PropertyRun(c).run(3000);
    if (::testing::Test::HasFailure()) return;
  }
}

}  // namespace
}  // namespace tessera::plugins::paged
