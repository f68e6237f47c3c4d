// Recurrent state snapshots: kept every `interval` tokens under the tokens
// before them, restored for the longest prefix a new prompt shares (never
// its last token), the least recently used given up at capacity.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "state_snapshots.hpp"

namespace tessera::plugins::memory {
namespace {

class StateSnapshotsTest : public ::testing::Test {
 protected:
  StateSnapshotsTest() {
    LayerMemorySpec layer;
    layer.kind = LayerMemoryKind::recurrent;
    layer.n_state_parts = 1;
    layer.state_elements = {3, 0, 0, 0};
    layers_ = {layer};
    states_ = RecurrentStates({64, layers_}, 6);  // two sequences' and up to four snapshots
    seq_ = *states_.take();
    fresh_ = *states_.take();
  }
  // A state that names `value`, in slot `slot`.
  void set(int32_t slot, float value) {
    for (int i = 0; i < 3; ++i) states_.view(slot, 0).parts[0][i] = value + static_cast<float>(i);
  }
  float value_of(int32_t slot) { return states_.view(slot, 0).parts[0][0]; }
  static std::vector<int32_t> tokens(int32_t n, int32_t first = 100) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    std::iota(t.begin(), t.end(), first);
    return t;
  }

  std::vector<LayerMemorySpec> layers_;
  RecurrentStates states_;
  int32_t seq_ = -1, fresh_ = -1;
};

TEST_F(StateSnapshotsTest, KeptOnlyOnMultiplesOfTheInterval) {
  StateSnapshots snapshots(4, 4, states_);
  const auto t = tokens(12);
  for (int32_t n : {1, 3, 5, 7}) snapshots.record(std::span(t).first(static_cast<size_t>(n)), states_, seq_);
  EXPECT_EQ(snapshots.size(), 0);
  set(seq_, 8);
  snapshots.record(std::span(t).first(8), states_, seq_);
  EXPECT_EQ(snapshots.size(), 1);
  set(seq_, 99);  // the same tokens again: the first copy stays
  snapshots.record(std::span(t).first(8), states_, seq_);
  EXPECT_EQ(snapshots.size(), 1);
  EXPECT_EQ(snapshots.restore(t, states_, fresh_), 8);
  EXPECT_EQ(value_of(fresh_), 8.0f);
  EXPECT_EQ(states_.view(fresh_, 0).parts[0][2], 10.0f) << "the whole state is copied";
}

TEST_F(StateSnapshotsTest, TheLongestSharedPrefixShortOfTheLastToken) {
  StateSnapshots snapshots(4, 4, states_);
  const auto t = tokens(16);
  set(seq_, 4);
  snapshots.record(std::span(t).first(4), states_, seq_);
  set(seq_, 12);
  snapshots.record(std::span(t).first(12), states_, seq_);
  // A prompt of 12 tokens: the snapshot at 12 would leave no token to compute.
  EXPECT_EQ(snapshots.restore(std::span(t).first(12), states_, fresh_), 4);
  EXPECT_EQ(value_of(fresh_), 4.0f);
  // 13 tokens: 12 are served, though no snapshot is held at 8.
  EXPECT_EQ(snapshots.restore(std::span(t).first(13), states_, fresh_), 12);
  EXPECT_EQ(value_of(fresh_), 12.0f);
  // A prompt differing inside the second block gets only the first.
  auto other = tokens(16);
  other[5] = 7;
  EXPECT_EQ(snapshots.restore(other, states_, fresh_), 4);
  // Nor does a block match after a different parent.
  auto shifted = tokens(16);
  shifted[0] = 7;
  EXPECT_EQ(snapshots.restore(shifted, states_, fresh_), 0);
}

TEST_F(StateSnapshotsTest, TheLeastRecentlyUsedIsGivenUpAtCapacity) {
  StateSnapshots snapshots(2, 2, states_);
  EXPECT_EQ(states_.used(), 4) << "two sequences' slots and the two reserved";
  EXPECT_EQ(snapshots.idle_slots(), 2);
  const auto a = tokens(3, 0), b = tokens(3, 10), c = tokens(3, 20);
  set(seq_, 1);
  snapshots.record(std::span(a).first(2), states_, seq_);
  set(seq_, 2);
  snapshots.record(std::span(b).first(2), states_, seq_);
  EXPECT_EQ(snapshots.idle_slots(), 0);
  EXPECT_EQ(snapshots.restore(a, states_, fresh_), 2);  // a is now the more recent
  set(seq_, 3);
  snapshots.record(std::span(c).first(2), states_, seq_);
  EXPECT_EQ(snapshots.size(), 2);
  EXPECT_EQ(states_.used(), 4) << "b's slot was reused";
  EXPECT_EQ(snapshots.restore(b, states_, fresh_), 0);
  EXPECT_EQ(snapshots.restore(a, states_, fresh_), 2);
  EXPECT_EQ(value_of(fresh_), 1.0f);
  EXPECT_EQ(snapshots.restore(c, states_, fresh_), 2);
  EXPECT_EQ(value_of(fresh_), 3.0f);
  snapshots.clear();
  EXPECT_EQ(snapshots.idle_slots(), 2);
  EXPECT_EQ(snapshots.restore(c, states_, fresh_), 0);
}

TEST_F(StateSnapshotsTest, OffKeepsNothingAndAReserveMustFit) {
  StateSnapshots off;
  const auto t = tokens(8);
  off.record(std::span(t).first(4), states_, seq_);
  EXPECT_EQ(off.restore(t, states_, fresh_), 0);
  EXPECT_EQ(states_.used(), 2);
  EXPECT_THROW(StateSnapshots(5, 4, states_), std::invalid_argument) << "four slots are free";
  EXPECT_EQ(states_.used(), 2) << "nothing taken by the refused reserve";
}

}  // namespace
}  // namespace tessera::plugins::memory
