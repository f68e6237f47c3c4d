// The prefetch choice on scripted call timings: which mode it keeps, when it
// tries both again, and that fixed modes stay fixed.
#include "prefetch_choice.hpp"

#include <gtest/gtest.h>

namespace tessera::ggml {
namespace {

constexpr uint64_t kBytes = 1 << 20;

PrefetchChoice::Settings small_settings() {
  PrefetchChoice::Settings s;
  s.ahead_bytes = 4096;
  s.calls_per_turn = 4;
  s.trial_turns = 3;
  s.kept_turns = 10;
  return s;
}

// Calls as a machine would time them: `ns_off` per call without prefetch,
// `ns_on` with, whichever the choice has the kernels use at that moment.
void run_calls(PrefetchChoice& c, int calls, uint64_t ns_off, uint64_t ns_on) {
  for (int i = 0; i < calls; ++i) {
    const bool on = c.ahead_bytes() != 0;
    c.record(kBytes, on ? ns_on : ns_off, on);
  }
}

int trial_calls(const PrefetchChoice::Settings& s) { return 2 * s.trial_turns * s.calls_per_turn; }
int kept_calls(const PrefetchChoice::Settings& s) { return s.kept_turns * s.calls_per_turn; }

TEST(PrefetchChoice, KeepsPrefetchWhereItStreamsFaster) {
  const auto s = small_settings();
  PrefetchChoice c(s);
  run_calls(c, trial_calls(s), 1000, 700);
  EXPECT_EQ(c.trials(), 1);
  EXPECT_EQ(c.trials_won_by_prefetch(), 1);
  EXPECT_EQ(c.ahead_bytes(), 4096);
  run_calls(c, kept_calls(s) - 1, 1000, 700);
  EXPECT_EQ(c.ahead_bytes(), 4096);  // kept through the whole run
}

TEST(PrefetchChoice, LeavesItOffWhereItCosts) {
  const auto s = small_settings();
  PrefetchChoice c(s);
  run_calls(c, trial_calls(s), 1000, 1040);
  EXPECT_EQ(c.trials(), 1);
  EXPECT_EQ(c.trials_won_by_prefetch(), 0);
  EXPECT_EQ(c.ahead_bytes(), 0);
}

TEST(PrefetchChoice, AlternatesDuringATrial) {
  const auto s = small_settings();
  PrefetchChoice c(s);
  int switches = 0;
  int64_t last = c.ahead_bytes();
  for (int i = 0; i < trial_calls(s) - 1; ++i) {
    c.record(kBytes, 1000, c.ahead_bytes() != 0);
    if (c.ahead_bytes() != last) ++switches;
    last = c.ahead_bytes();
  }
  EXPECT_EQ(switches, 2 * s.trial_turns - 1);  // off, on, off, on, ...: a switch after every turn
  EXPECT_EQ(c.trials(), 0);
}

TEST(PrefetchChoice, FollowsTheMachineWhenItChanges) {
  const auto s = small_settings();
  PrefetchChoice c(s);
  run_calls(c, trial_calls(s) + kept_calls(s) - 1, 1000, 700);  // a slow-to-answer memory: on
  EXPECT_EQ(c.trials(), 1);
  EXPECT_EQ(c.ahead_bytes(), 4096);
  run_calls(c, 1 + trial_calls(s), 1000, 1100);  // the kept run's last call, then a trial: prefetch now costs
  EXPECT_EQ(c.trials(), 2);
  EXPECT_EQ(c.trials_won_by_prefetch(), 1);
  EXPECT_EQ(c.ahead_bytes(), 0);
}

TEST(PrefetchChoice, WeighsBytesNotCalls) {
  // Calls of different sizes: the mode that moved more bytes per second wins
  // even though its calls took longer each.
  auto s = small_settings();
  s.trial_turns = 1;
  PrefetchChoice c(s);
  for (int i = 0; i < s.calls_per_turn; ++i) c.record(kBytes, 1000, false);  // off: 1 MiB per 1000 ns
  ASSERT_EQ(c.ahead_bytes(), 4096);
  for (int i = 0; i < s.calls_per_turn; ++i) c.record(4 * kBytes, 2000, true);  // on: 4 MiB per 2000 ns
  EXPECT_EQ(c.trials_won_by_prefetch(), 1);
  EXPECT_EQ(c.ahead_bytes(), 4096);
}

TEST(PrefetchChoice, LateReportsCountForTheirOwnModeNotTheTurn) {
  // A thread reports calls it made before the switch: they are timings of
  // the mode they ran in, and they do not end the new mode's turn early.
  auto s = small_settings();
  s.trial_turns = 1;
  PrefetchChoice c(s);
  for (int i = 0; i < s.calls_per_turn; ++i) c.record(kBytes, 1000, false);
  ASSERT_EQ(c.ahead_bytes(), 4096);                   // the second turn: on
  c.record(kBytes, 100000, false, s.calls_per_turn);  // late, slow, off
  EXPECT_EQ(c.ahead_bytes(), 4096);                   // still on's turn
  for (int i = 0; i < s.calls_per_turn; ++i) c.record(kBytes, 1500, true);
  EXPECT_EQ(c.trials(), 1);
  EXPECT_EQ(c.trials_won_by_prefetch(), 1);  // off's sum carries the late slow calls
}

TEST(PrefetchChoice, SettingTheSameModeAgainKeepsTheRunningChoice) {
  const auto s = small_settings();
  PrefetchChoice c(s);
  run_calls(c, trial_calls(s), 1000, 700);
  ASSERT_EQ(c.ahead_bytes(), 4096);
  c.set_mode(PrefetchMode::automatic);  // a second model with the same settings
  EXPECT_EQ(c.ahead_bytes(), 4096);
  EXPECT_EQ(c.trials(), 1);
}

TEST(PrefetchChoice, FixedModesIgnoreTimings) {
  const auto s = small_settings();
  PrefetchChoice c(s);
  c.set_mode(PrefetchMode::on);
  EXPECT_EQ(c.ahead_bytes(), 4096);
  run_calls(c, 10 * trial_calls(s), 1000, 5000);
  EXPECT_EQ(c.ahead_bytes(), 4096);
  EXPECT_EQ(c.trials(), 0);
  c.set_mode(PrefetchMode::off);
  run_calls(c, 10 * trial_calls(s), 5000, 1000);
  EXPECT_EQ(c.ahead_bytes(), 0);
  c.set_mode(PrefetchMode::automatic);  // a new trial
  EXPECT_EQ(c.mode(), PrefetchMode::automatic);
  EXPECT_EQ(c.ahead_bytes(), 0);
  run_calls(c, trial_calls(s), 1000, 500);
  EXPECT_EQ(c.ahead_bytes(), 4096);
}

TEST(PrefetchChoice, ParsesTheParameter) {
  PrefetchMode m = PrefetchMode::off;
  EXPECT_TRUE(parse_prefetch_mode("auto", &m));
  EXPECT_EQ(m, PrefetchMode::automatic);
  EXPECT_TRUE(parse_prefetch_mode("on", &m));
  EXPECT_EQ(m, PrefetchMode::on);
  EXPECT_TRUE(parse_prefetch_mode("off", &m));
  EXPECT_EQ(m, PrefetchMode::off);
  EXPECT_FALSE(parse_prefetch_mode("yes", &m));
  EXPECT_EQ(m, PrefetchMode::off);
}

}  // namespace
}  // namespace tessera::ggml
