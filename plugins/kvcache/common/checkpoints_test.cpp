// Checkpoints per sequence: found by id, forgotten one at a time, all at
// release, and those a truncation overtook.
#include <gtest/gtest.h>

#include "checkpoints.hpp"

namespace tessera::plugins::memory {
namespace {

TEST(CheckpointTable, AddFindRemove) {
  CheckpointTable t;
  const CheckpointId a = t.add(1, 10, 4);
  const CheckpointId b = t.add(1, 12, -1);
  const CheckpointId c = t.add(2, 3, 5);
  EXPECT_NE(a, b);
  ASSERT_NE(t.find(1, a), nullptr);
  EXPECT_EQ(t.find(1, a)->length, 10);
  EXPECT_EQ(t.find(1, a)->state_slot, 4);
  EXPECT_EQ(t.find(2, a), nullptr) << "a checkpoint belongs to its sequence";
  const auto removed = t.remove(1, a);
  ASSERT_TRUE(removed.has_value());
  EXPECT_EQ(removed->state_slot, 4);
  EXPECT_EQ(t.find(1, a), nullptr);
  EXPECT_FALSE(t.remove(1, a).has_value()) << "twice";
  EXPECT_NE(t.find(1, b), nullptr);
  EXPECT_EQ(t.remove_all(2).size(), 1u);
  EXPECT_EQ(t.find(2, c), nullptr);
}

TEST(CheckpointTable, TruncationForgetsTheLongerOnes) {
  CheckpointTable t;
  const CheckpointId short_one = t.add(7, 5, -1);
  const CheckpointId long_one = t.add(7, 9, -1);
  const auto removed = t.remove_longer(7, 6);
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0].id, long_one);
  EXPECT_NE(t.find(7, short_one), nullptr);
}

}  // namespace
}  // namespace tessera::plugins::memory
