#include "engine/speculation_stats.hpp"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(SpeculationStats, FollowVllmsDefinitions) {
  SpeculationStats s;
  s.add(4, 4);
  s.add(4, 1);
  s.add(2, 0);
  s.add(0, 0);  // no drafts: not a draft step
  EXPECT_EQ(s.drafts, 3);
  EXPECT_EQ(s.drafted_tokens, 10);
  EXPECT_EQ(s.accepted_tokens, 5);
  EXPECT_DOUBLE_EQ(s.acceptance_rate(), 0.5);
  EXPECT_DOUBLE_EQ(s.mean_acceptance_length(), 1.0 + 5.0 / 3.0);
  const auto j = s.to_json();
  EXPECT_EQ(j["drafted_by_position"], (std::vector<int64_t>{3, 3, 2, 2}));
  const auto by_position = j["acceptance_by_position"].get<std::vector<double>>();
  ASSERT_EQ(by_position.size(), 4u);
  EXPECT_DOUBLE_EQ(by_position[0], 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(by_position[1], 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(by_position[3], 0.5);
}

TEST(SpeculationStats, MergeAddsEveryFigureAndPosition) {
  SpeculationStats a, b;
  a.add(2, 1);
  a.draft_ms = 3;
  b.add(4, 4);
  b.verify_ms = 5;
  b.requests_turned_off = 1;
  a.merge(b);
  EXPECT_EQ(a.drafts, 2);
  EXPECT_EQ(a.drafted_tokens, 6);
  EXPECT_EQ(a.accepted_tokens, 5);
  EXPECT_EQ(a.drafted_at, (std::vector<int64_t>{2, 2, 1, 1}));
  EXPECT_EQ(a.accepted_at, (std::vector<int64_t>{2, 1, 1, 1}));
  EXPECT_DOUBLE_EQ(a.draft_ms, 3);
  EXPECT_DOUBLE_EQ(a.verify_ms, 5);
  EXPECT_EQ(a.requests_turned_off, 1);
}

}  // namespace
}  // namespace tessera
