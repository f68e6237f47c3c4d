// What every memory plugin (family kvcache) must do beyond holding K/V, run
// against each of them: checkpoints, admission, recurrent states that forks
// copy and checkpoints restore, and layer views only for the layers that
// have that kind of memory. `make` returns a configured memory for a spec.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <vector>

#include "state_specs.hpp"
#include "tessera/sequence_memory.hpp"

namespace tessera::test {

using MakeMemory = std::function<std::unique_ptr<SequenceMemory>(const SequenceStateSpec&)>;

// Writes `value` into every element of every part of seq's state in `layer`.
inline void fill_state(SequenceMemory& m, const LayerMemorySpec& spec, SeqId seq, int32_t layer, float value) {
  const RecurrentStateView v = m.state(seq, layer);
  for (int32_t p = 0; p < spec.n_state_parts; ++p)
    for (uint64_t i = 0; i < spec.state_elements[static_cast<size_t>(p)]; ++i)
      v.parts[static_cast<size_t>(p)][i] = value + static_cast<float>(i);
}

inline bool state_is(SequenceMemory& m, const LayerMemorySpec& spec, SeqId seq, int32_t layer, float value) {
  const RecurrentStateView v = m.state(seq, layer);
  for (int32_t p = 0; p < spec.n_state_parts; ++p) {
    if (v.parts[static_cast<size_t>(p)] == nullptr) return false;
    for (uint64_t i = 0; i < spec.state_elements[static_cast<size_t>(p)]; ++i)
      if (v.parts[static_cast<size_t>(p)][i] != value + static_cast<float>(i)) return false;
  }
  return true;
}

inline void expect_attention_checkpoints(const MakeMemory& make) {
  const OwnedStateSpec owned = attention_spec(2, 2, 4, 64);
  auto m = make(owned.spec());
  ASSERT_NE(m, nullptr);
  const SeqId s = *m->create_sequence();
  ASSERT_TRUE(m->append_slots(s, 5).ok());
  auto c = m->checkpoint(s);
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_TRUE(m->append_slots(s, 4).ok());
  ASSERT_TRUE(m->restore(s, *c).ok());
  EXPECT_EQ(m->length(s), 5) << "back to the checkpoint's length";
  ASSERT_TRUE(m->append_slots(s, 2).ok());
  ASSERT_TRUE(m->restore(s, *c).ok()) << "a checkpoint may be restored again";
  EXPECT_EQ(m->length(s), 5);
  ASSERT_TRUE(m->truncate(s, 3).ok());
  EXPECT_EQ(m->restore(s, *c).code(), StatusCode::not_found) << "truncated below: its tokens are gone";
  auto d = m->checkpoint(s);
  ASSERT_TRUE(d.ok());
  m->drop_checkpoint(s, *d);
  EXPECT_EQ(m->restore(s, *d).code(), StatusCode::not_found) << "dropped";
  EXPECT_EQ(m->checkpoint(12345).status().code(), StatusCode::not_found);
  EXPECT_EQ(m->state(s, 0).parts[0], nullptr) << "no recurrent layer";
  m->release(s);
}

inline void expect_admission(const MakeMemory& make, int64_t tokens_in_pool) {
  const OwnedStateSpec owned = attention_spec(2, 2, 4, 64);
  auto m = make(owned.spec());
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->max_sequence_tokens(), std::min<int64_t>(64, tokens_in_pool));
  const MemoryDemand one_full{-1, std::min<int64_t>(64, tokens_in_pool)};
  EXPECT_TRUE(m->can_hold(std::span<const MemoryDemand>(&one_full, 1)));
  const MemoryDemand too_long{-1, 65};
  EXPECT_FALSE(m->can_hold(std::span<const MemoryDemand>(&too_long, 1))) << "beyond the context";
}

// A Mamba-like model: two recurrent layers around an attention layer.
inline OwnedStateSpec hybrid_spec() {
  return {32, {recurrent_layer(6, 10), LayerMemorySpec::attention(2, 4), recurrent_layer(6, 10)}};
}

inline void expect_recurrent_states(const MakeMemory& make) {
  const OwnedStateSpec owned = hybrid_spec();
  const LayerMemorySpec& r = owned.layers[0];
  auto m = make(owned.spec());
  ASSERT_NE(m, nullptr);
  const SeqId a = *m->create_sequence();
  {
    const RecurrentStateView v = m->state(a, 0);
    ASSERT_NE(v.parts[0], nullptr);
    ASSERT_NE(v.parts[1], nullptr);
    EXPECT_EQ(v.parts[2], nullptr);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(v.parts[0][i], 0.0f) << "a new sequence starts from a zero state";
  }
  EXPECT_EQ(m->state(a, 1).parts[0], nullptr) << "the attention layer has no state";
  EXPECT_NE(m->layer(1).k, nullptr) << "but K/V";
  EXPECT_EQ(m->layer(0).k, nullptr) << "a recurrent layer has no K/V";

  ASSERT_TRUE(m->append_slots(a, 3).ok());
  fill_state(*m, r, a, 0, 10.0f);
  fill_state(*m, r, a, 2, 20.0f);
  auto c = m->checkpoint(a);
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_TRUE(m->append_slots(a, 2).ok());
  fill_state(*m, r, a, 0, 11.0f);
  fill_state(*m, r, a, 2, 21.0f);
  EXPECT_EQ(m->truncate(a, 3).code(), StatusCode::unsupported) << "a recurrent state cannot be cut back";

  auto f = m->fork(a);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_TRUE(state_is(*m, r, *f, 0, 11.0f)) << "a fork copies the state";
  EXPECT_EQ(m->length(*f), 5);
  fill_state(*m, r, *f, 0, 99.0f);
  EXPECT_TRUE(state_is(*m, r, a, 0, 11.0f)) << "and then they diverge";

  ASSERT_TRUE(m->restore(a, *c).ok());
  EXPECT_EQ(m->length(a), 3);
  EXPECT_TRUE(state_is(*m, r, a, 0, 10.0f)) << "the state the checkpoint saved";
  EXPECT_TRUE(state_is(*m, r, a, 2, 20.0f));
  EXPECT_TRUE(state_is(*m, r, *f, 0, 99.0f)) << "the fork is untouched";

  const MemoryStats before = m->stats();
  EXPECT_GT(before.states_total, 0);
  EXPECT_EQ(before.states_used, 3) << "a, its fork and a's checkpoint";
  m->release(a);
  EXPECT_EQ(m->stats().states_used, 1) << "a and its checkpoint freed";
  m->release(*f);
  EXPECT_EQ(m->stats().states_used, 0);
}

// A recurrent model: up to `sequences` sequences, then `checkpoints` more
// state slots for checkpoints; beyond, out_of_memory, never a crash.
inline void expect_state_slots_run_out_cleanly(const MakeMemory& make, int32_t sequences, int32_t checkpoints) {
  const OwnedStateSpec owned = recurrent_spec(2, 6, 10, 32);
  auto m = make(owned.spec());
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->stats().states_total, sequences + checkpoints);
  std::vector<SeqId> seqs;
  for (int32_t i = 0; i < sequences; ++i) {
    auto s = m->create_sequence();
    ASSERT_TRUE(s.ok()) << i << ": " << s.status().message();
    seqs.push_back(*s);
  }
  EXPECT_EQ(m->create_sequence().status().code(), StatusCode::out_of_memory);
  const MemoryDemand one_more{-1, 4};
  EXPECT_FALSE(m->can_hold(std::span<const MemoryDemand>(&one_more, 1))) << "no room for a new sequence";
  for (int32_t i = 0; i < checkpoints; ++i) ASSERT_TRUE(m->checkpoint(seqs[0]).ok()) << i;
  EXPECT_EQ(m->checkpoint(seqs[0]).status().code(), StatusCode::out_of_memory);
  m->release(seqs.back());
  EXPECT_TRUE(m->can_hold(std::span<const MemoryDemand>(&one_more, 1)));
  EXPECT_TRUE(m->create_sequence().ok());
  EXPECT_EQ(m->max_sequence_tokens(), 32) << "a recurrent model's length is bound by the context only";
}

// The prefix cache of an all-recurrent model, for a memory made with
// prefix_snapshots >= 2 and snapshot_interval = 4: the state a sequence had
// after 8 tokens is kept when it is told of them there (not at 6, nor while
// draft tokens beyond them are held), and a later prompt sharing those 8
// tokens starts from a copy of it; a hybrid model gets no snapshots.
inline void expect_state_prefix_cache(const MakeMemory& make) {
  const OwnedStateSpec owned = recurrent_spec(2, 6, 10, 64);
  const LayerMemorySpec& r = owned.layers[0];
  auto m = make(owned.spec());
  ASSERT_NE(m, nullptr);
  ASSERT_TRUE(provides(*m, 5));
  EXPECT_EQ(m->prefix_granularity(), 4);
  const std::vector<int32_t> prompt = {5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
  const std::span<const int32_t> tokens(prompt);

  const SeqId a = *m->create_sequence();
  EXPECT_EQ(m->reuse_prefix(a, tokens), 0) << "nothing kept yet";
  ASSERT_TRUE(m->append_slots(a, 6).ok());
  fill_state(*m, r, a, 0, 6.0f);
  m->record_tokens(a, tokens.first(6));  // not a multiple of 4: nothing kept
  ASSERT_TRUE(m->append_slots(a, 3).ok());
  fill_state(*m, r, a, 0, 9.0f);
  m->record_tokens(a, tokens.first(8));  // 9 slots held (a draft token): nothing kept
  const SeqId b = *m->create_sequence();
  EXPECT_EQ(m->reuse_prefix(b, tokens), 0);
  m->release(b);

  const SeqId c = *m->create_sequence();
  ASSERT_TRUE(m->append_slots(c, 8).ok());
  fill_state(*m, r, c, 0, 8.0f);
  fill_state(*m, r, c, 1, 18.0f);
  m->record_tokens(c, tokens.first(8));
  fill_state(*m, r, c, 0, 99.0f);  // c goes on; the snapshot does not follow it

  const SeqId d = *m->create_sequence();
  EXPECT_EQ(m->reuse_prefix(d, tokens), 8);
  EXPECT_EQ(m->length(d), 8);
  EXPECT_TRUE(state_is(*m, r, d, 0, 8.0f)) << "the state after the shared 8 tokens";
  EXPECT_TRUE(state_is(*m, r, d, 1, 18.0f));
  EXPECT_EQ(m->stats().prefix_hit_tokens, 8);
  ASSERT_TRUE(m->append_slots(d, 2).ok()) << "the sequence goes on from there";

  const SeqId e = *m->create_sequence();
  EXPECT_EQ(m->reuse_prefix(e, tokens.first(8)), 0) << "the whole prompt: its last token must be computed";
  const std::vector<int32_t> other = {5, 6, 7, 8, 9, 10, 11, 0, 13, 14};
  const SeqId f = *m->create_sequence();
  EXPECT_EQ(m->reuse_prefix(f, other), 0) << "a prompt differing before token 8";
  for (SeqId s : {a, c, d, e, f}) m->release(s);

  const OwnedStateSpec hybrid = hybrid_spec();
  auto h = make(hybrid.spec());
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->prefix_granularity(), 0) << "K/V would have to be kept with the state";
}

}  // namespace tessera::test
