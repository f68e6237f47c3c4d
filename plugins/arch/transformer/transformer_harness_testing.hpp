// transformer_harness_testing.hpp: builds the plugin's model over the fake model and runs batches
// the way the engine does (append_slots, then forward).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "fake_model_testing.hpp"
#include "reference_forward_testing.hpp"
#include "transformer_model.hpp"

namespace tessera::transformer::testing {

using Rows = std::vector<std::vector<float>>;  // [n_rows][vocab]

// One sequence's share of a step.
struct Chunk {
  SeqId seq = 0;
  std::vector<int32_t> tokens;
  bool all_logits = false;  // logits of every token, else of the last
};

class Harness {
 public:
  // block_size 0: contiguous cache (one block of the whole context per sequence).
  // `tweak` may change the fake weights' storage before the model is built.
  explicit Harness(const TinySpec& spec, int32_t block_size = 0,
                   const std::function<void(FakeWeightStore&)>& tweak = {})
      : store_(make_tiny_model(spec)), builder_(*store_, attention_) {
    if (tweak) tweak(*store_);
    auto built = build_transformer(builder_);
    builder_.expire();  // the core's builder is gone once build() returns
    if (!built.ok()) {
      ADD_FAILURE() << "build failed: " << built.status().message();
      return;
    }
    model_ = std::move(built).value();
    const SequenceStateSpec state = model_->state_spec();
    const int32_t bs = block_size > 0 ? block_size : static_cast<int32_t>(state.max_context);
    const int32_t blocks_per_seq = static_cast<int32_t>((state.max_context + bs - 1) / bs);
    cache_ = std::make_unique<TestKvCache>(bs, blocks_per_seq * kMaxSequences);
    EXPECT_TRUE(cache_->configure(state).ok());
  }

  bool ok() const { return model_ != nullptr; }
  Model& model() { return *model_; }
  TestKvCache& cache() { return *cache_; }
  FakeBuilder& builder() { return builder_; }
  PlainAttention& attention() { return attention_; }
  const FakeWeightStore& weights() const { return *store_; }

  SeqId new_sequence() { return cache_->create_sequence().value(); }

  // Runs one forward over `chunks`; with reverse_layout the token array holds
  // the chunks last-to-first while seqs keep chunk order (logits follow seqs).
  // Returns the logits of each chunk: [chunk][row][vocab].
  std::vector<Rows> step(const std::vector<Chunk>& chunks, bool reverse_layout = false) {
    std::vector<int32_t> tokens;
    std::vector<BatchSeq> seqs(chunks.size());
    std::vector<size_t> order(chunks.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = reverse_layout ? order.size() - 1 - i : i;
    for (size_t i : order) {
      const Chunk& c = chunks[i];
      BatchSeq& s = seqs[i];
      s.seq = c.seq;
      s.token_offset = static_cast<int32_t>(tokens.size());
      s.n_tokens = static_cast<int32_t>(c.tokens.size());
      s.n_past = cache_->length(c.seq);
      s.n_logits = c.all_logits ? s.n_tokens : 1;
      tokens.insert(tokens.end(), c.tokens.begin(), c.tokens.end());
      EXPECT_TRUE(cache_->append_slots(c.seq, s.n_tokens).ok());
    }
    const Batch batch{tokens, seqs};
    const int64_t vocab = model_->vocab_size();
    std::vector<float> logits(static_cast<size_t>(batch.logit_rows() * vocab), NAN);
    const Status st = model_->forward(batch, *cache_, logits.data());
    EXPECT_TRUE(st.ok()) << st.message();

    std::vector<Rows> out;
    size_t row = 0;
    for (const Chunk& c : chunks) {
      Rows rows;
      const size_t n = c.all_logits ? c.tokens.size() : 1;
      for (size_t i = 0; i < n; ++i, ++row)
        rows.emplace_back(logits.begin() + row * vocab, logits.begin() + (row + 1) * vocab);
      out.push_back(std::move(rows));
    }
    return out;
  }

  static constexpr int32_t kMaxSequences = 4;

 private:
  std::unique_ptr<FakeWeightStore> store_;
  PlainAttention attention_;
  FakeBuilder builder_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<TestKvCache> cache_;
};

inline std::vector<int32_t> random_tokens(size_t n, int64_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> dist(0, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> t(n);
  for (auto& x : t) x = dist(rng);
  return t;
}

// Tolerance: 1e-4 relative to the largest expected magnitude (at least 1).
// f32 sums of 64..96 terms in a different order differ by ~1e-6 relative.
inline void expect_close(const std::vector<float>& actual, const std::vector<float>& expected,
                         const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  float scale = 1.0f;
  for (float e : expected) scale = std::max(scale, std::fabs(e));
  const float tol = 1e-4f * scale;
  for (size_t i = 0; i < actual.size(); ++i)
    ASSERT_NEAR(actual[i], expected[i], tol) << what << ", element " << i;
}

inline void expect_rows_close(const Rows& actual, const Rows& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t r = 0; r < actual.size(); ++r) expect_close(actual[r], expected[r], what + ", row " + std::to_string(r));
}

}  // namespace tessera::transformer::testing
