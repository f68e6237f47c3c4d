#include "engine/draft_length.hpp"

#include <gtest/gtest.h>


namespace tessera {
namespace {

// Costs of a memory-bound machine: verifying k drafts costs a little more
// than a plain step; a draft forward 1/4 of one.
DraftCosts cheap_verification(double draft_ms = 2.5) {
  DraftCosts c;
  for (int32_t k = 0; k <= 8; ++k) c.record_step(k, 10.0 + 0.5 * k);
  c.record_step(0, 10.0);
  c.record_draft(draft_ms);
  return c;
}

TEST(DraftCosts, MeasuredLengthsAreUsedAndOthersInterpolatedOrExtended) {
  DraftCosts c;
  EXPECT_EQ(c.step_ms(3), 0.0) << "nothing measured";
  c.record_step(0, 10);
  c.record_step(4, 14);
  EXPECT_DOUBLE_EQ(c.step_ms(0), 10);
  EXPECT_DOUBLE_EQ(c.step_ms(2), 12) << "between two measured lengths";
  EXPECT_DOUBLE_EQ(c.step_ms(6), 16) << "beyond: the slope of the last two";
  DraftCosts one;
  one.record_step(0, 10);
  EXPECT_GT(one.step_ms(3), 10.0) << "a guess, more than a plain step";
  EXPECT_LT(one.step_ms(3), 40.0) << "and far less than four steps";
}

TEST(DraftCosts, RecentMeasurementsWeighMost) {
  DraftCosts c;
  for (int i = 0; i < 100; ++i) c.record_step(0, 10);
  for (int i = 0; i < 100; ++i) c.record_step(0, 20);
  EXPECT_NEAR(c.step_ms(0), 20, 0.01);
}

TEST(DraftLength, WaitsForPlainStepsToBeMeasuredFirst) {
  DraftLength d({8, true, true});
  DraftCosts costs;
  EXPECT_EQ(d.next(costs), 0);
  costs.record_step(0, 10);
  EXPECT_EQ(d.next(costs), 0) << "one plain step may be an outlier";
  costs.record_step(0, 10);
  EXPECT_GT(d.next(costs), 0);
  EXPECT_FALSE(d.off());
}

TEST(DraftLength, DraftsLongWhenDraftsAreKept) {
  DraftLength d({8, true, true});
  const DraftCosts c = cheap_verification();
  for (int i = 0; i < 20; ++i) d.record(4, 4);
  EXPECT_GT(d.acceptance(), 0.9);
  EXPECT_GE(d.next(c), 5);
}

TEST(DraftLength, DraftsShortWhenDraftsAreOftenRejected) {
  DraftLength d({8, true, true});
  const DraftCosts c = cheap_verification(1.0);
  for (int i = 0; i < 20; ++i) d.record(4, 1);  // a = 0.5
  const int32_t k = d.next(c);
  EXPECT_GE(k, 1);
  EXPECT_LE(k, 3);
}

TEST(DraftLength, TurnsOffWhenDraftingDoesNotPayAndProbesAgainLater) {
  DraftLength d({8, true, true});
  const DraftCosts c = cheap_verification(/*draft_ms=*/8.0);  // a draft token costs 80% of a step
  for (int i = 0; i < 20; ++i) d.record(2, 0);
  EXPECT_EQ(d.next(c), 0);
  EXPECT_TRUE(d.off());
  EXPECT_EQ(d.times_off(), 1);
  int rested = 0;
  while (d.next(c) == 0 && rested < 1000) ++rested;
  EXPECT_GE(rested, 7) << "rests before probing";
  EXPECT_LT(rested, 1000);
  d.record(2, 0);  // the probe fails: a longer rest
  int rested_again = 0;
  while (d.next(c) == 0 && rested_again < 1000) ++rested_again;
  EXPECT_GT(rested_again, rested);
  // A probe whose drafts are all kept turns drafting back on; with kept
  // drafts and a cheap draft, it pays again.
  for (int i = 0; i < 30; ++i) d.record(2, 2);
  EXPECT_FALSE(d.off());
}

TEST(DraftLength, FreeDraftsNeedLessAcceptanceToPay) {
  // Prompt lookup costs nothing to draft: even a modest acceptance pays
  // where a costly draft model would not.
  const DraftCosts c = cheap_verification(/*draft_ms=*/8.0);
  DraftLength lookup({8, true, false}), model({8, true, true});
  for (int i = 0; i < 20; ++i) {
    lookup.record(2, 1);
    model.record(2, 1);
  }
  EXPECT_GE(lookup.next(c), 1);
  EXPECT_EQ(model.next(c), 0);
}

TEST(DraftLength, NotAdaptiveAlwaysDraftsTheMost) {
  DraftLength d({5, false, true});
  DraftCosts none;
  for (int i = 0; i < 20; ++i) d.record(5, 0);
  EXPECT_EQ(d.next(none), 5);
  EXPECT_FALSE(d.off());
}

}  // namespace
}  // namespace tessera
