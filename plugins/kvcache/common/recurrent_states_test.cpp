// Recurrent state slots: each layer's parts at their own place in a slot,
// slots zeroed when taken, copied whole, given back for reuse.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "recurrent_states.hpp"

namespace tessera::plugins::memory {
namespace {

std::vector<LayerMemorySpec> mamba_like() {
  LayerMemorySpec r;
  r.kind = LayerMemoryKind::recurrent;
  r.n_state_parts = 2;
  r.state_elements = {6, 10, 0, 0};  // conv window, SSM state
  return {r, LayerMemorySpec::attention(1, 4), r};
}

TEST(RecurrentStates, LayersPartsAndSlotsDoNotOverlap) {
  const auto layers = mamba_like();
  RecurrentStates states({16, layers}, 3);
  EXPECT_EQ(states.slot_bytes(), 2u * (6 + 10) * sizeof(float));
  EXPECT_EQ(states.total(), 3);
  std::set<float*> seen;
  for (int32_t slot = 0; slot < 3; ++slot) {
    ASSERT_EQ(states.take(), slot) << "lowest free slot first";
    for (int32_t layer : {0, 2}) {
      const RecurrentStateView v = states.view(slot, layer);
      ASSERT_NE(v.parts[0], nullptr);
      ASSERT_NE(v.parts[1], nullptr);
      EXPECT_EQ(v.parts[1] - v.parts[0], 6) << "part 1 follows part 0's 6 floats";
      EXPECT_EQ(v.parts[2], nullptr);
      EXPECT_TRUE(seen.insert(v.parts[0]).second);
      EXPECT_TRUE(seen.insert(v.parts[1]).second);
    }
    const RecurrentStateView attention = states.view(slot, 1);
    EXPECT_EQ(attention.parts[0], nullptr) << "an attention layer has no state";
  }
  EXPECT_FALSE(states.take().has_value()) << "all three taken";
  EXPECT_EQ(states.used(), 3);
}

TEST(RecurrentStates, TakenSlotsAreZeroAndCopiesAreWhole) {
  const auto layers = mamba_like();
  RecurrentStates states({16, layers}, 2);
  const int32_t a = *states.take();
  const int32_t b = *states.take();
  for (int32_t layer : {0, 2}) {
    const RecurrentStateView v = states.view(a, layer);
    for (int i = 0; i < 6; ++i) v.parts[0][i] = static_cast<float>(layer * 100 + i);
    for (int i = 0; i < 10; ++i) v.parts[1][i] = static_cast<float>(layer * 100 + 50 + i);
  }
  states.copy(a, b);
  for (int32_t layer : {0, 2}) {
    const RecurrentStateView v = states.view(b, layer);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(v.parts[0][i], static_cast<float>(layer * 100 + i));
    for (int i = 0; i < 10; ++i) EXPECT_EQ(v.parts[1][i], static_cast<float>(layer * 100 + 50 + i));
  }
  states.give_back(a);
  const int32_t again = *states.take();
  EXPECT_EQ(again, a);
  for (int32_t layer : {0, 2}) {
    const RecurrentStateView v = states.view(again, layer);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(v.parts[0][i], 0.0f) << "a reused slot starts from zero";
  }
}

TEST(RecurrentStates, AModelWithoutRecurrentLayersHasNoSlots) {
  const std::vector<LayerMemorySpec> layers = {LayerMemorySpec::attention(2, 8)};
  RecurrentStates states({16, layers}, 8);
  EXPECT_EQ(states.slot_bytes(), 0u);
  EXPECT_EQ(states.total(), 0);
  EXPECT_FALSE(states.take().has_value());
}

}  // namespace
}  // namespace tessera::plugins::memory
