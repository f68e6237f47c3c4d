// The thread policy on scripted run delays, and the schedstat meter on this
// machine.
#include "backend/cpu/thread_governor.hpp"

#include <gtest/gtest.h>

#include <omp.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace tessera {
namespace {

constexpr uint64_t kStep = 8'000'000;  // an 8 ms step

// A step at the policy's thread count with run-delay share `share` per thread.
void run(ThreadPolicy& p, double share, int steps = 1) {
  for (int i = 0; i < steps; ++i)
    p.step_done(kStep, static_cast<uint64_t>(share * static_cast<double>(kStep) * p.threads()));
}

TEST(ThreadPolicy, KeepsEveryThreadOnQuietCores) {
  ThreadPolicy p(2);
  run(p, 0.01, 1000);
  EXPECT_EQ(p.threads(), 2);
}

TEST(ThreadPolicy, ShortBurstsDoNotDrop) {
  ThreadPolicy p(2);
  for (int i = 0; i < 10; ++i) {
    run(p, 0.0, 5);
    run(p, 0.9, ThreadPolicy::kHinderedSteps - 1);
  }
  EXPECT_EQ(p.threads(), 2);
  run(p, 0.0, 5);
  EXPECT_EQ(p.threads(), 2);
}

TEST(ThreadPolicy, DropsToOneThreadOnBusyCoresAndStaysWhileTheyAre) {
  ThreadPolicy p(2);
  run(p, 0.5, ThreadPolicy::kHinderedSteps);
  EXPECT_EQ(p.threads(), 1);
  // At one thread on still-busy cores the share stays high: no try of two.
  run(p, 0.33, 10000);
  EXPECT_EQ(p.threads(), 1);
}

TEST(ThreadPolicy, GoesBackUpWhenTheCoresAreFreeAgain) {
  ThreadPolicy p(4);
  run(p, 0.5, 2 * ThreadPolicy::kHinderedSteps);
  EXPECT_EQ(p.threads(), 2);
  run(p, 0.0, ThreadPolicy::kFirstProbeSteps);
  EXPECT_EQ(p.threads(), 3);
  run(p, 0.0, ThreadPolicy::kProbeSettleSteps + ThreadPolicy::kFirstProbeSteps);
  EXPECT_EQ(p.threads(), 4);
  run(p, 0.0, 1000);
  EXPECT_EQ(p.threads(), 4);
}

// One busy neighbour on two cores: one thread runs unhindered on the free
// core, two are hindered. The tries of two get rarer each time they fail.
TEST(ThreadPolicy, FailedTriesBackOff) {
  ThreadPolicy p(2);
  run(p, 0.4, ThreadPolicy::kHinderedSteps);
  ASSERT_EQ(p.threads(), 1);
  int tries = 0, steps = 0;
  std::vector<int> try_steps;
  while (steps < 20000) {
    run(p, 0.0);
    ++steps;
    if (p.threads() == 2) {
      ++tries;
      try_steps.push_back(steps);
      run(p, 0.4, ThreadPolicy::kHinderedSteps);
      steps += ThreadPolicy::kHinderedSteps;
      ASSERT_EQ(p.threads(), 1);
    }
  }
  // 8, 16, 32, ... 4096, then every 4096: about 12 tries in 20000 steps.
  EXPECT_GE(tries, 8);
  EXPECT_LE(tries, 14);
  ASSERT_GE(try_steps.size(), 3u);
  EXPECT_GT(try_steps[2] - try_steps[1], try_steps[1] - try_steps[0]);
}

TEST(ThreadPolicy, NeverBelowOneOrAboveTheMaximum) {
  ThreadPolicy one(1);
  run(one, 1.0, 100);
  EXPECT_EQ(one.threads(), 1);
  ThreadPolicy zero(0);
  EXPECT_EQ(zero.threads(), 1);
}

TEST(RunDelay, ParsesTheSecondField) {
  EXPECT_EQ(parse_run_delay("182843 4096 17\n"), 4096u);
  EXPECT_EQ(parse_run_delay("0 0 1"), 0u);
  EXPECT_EQ(parse_run_delay(""), 0u);
  EXPECT_EQ(parse_run_delay("garbage"), 0u);
}

// On this machine: the meter finds the team's threads and its figure only
// grows. Two spinning threads per core, for a while, must be delayed.
TEST(RunDelay, MeasuresContentionOnThisMachine) {
  const int team = std::max(1, omp_get_num_procs());
  RunDelayMeter meter(team);
  if (!meter.available()) GTEST_SKIP() << "this kernel does not provide /proc/<pid>/task/<tid>/schedstat";
  const uint64_t before = meter.run_delay_ns();
  std::atomic<bool> stop{false};
  std::vector<std::thread> hogs;
  for (int i = 0; i < team; ++i)
    hogs.emplace_back([&stop] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
#pragma omp parallel num_threads(team)
  {
    volatile uint64_t x = 0;
    while (std::chrono::steady_clock::now() < until) x = x + 1;
  }
  stop = true;
  for (auto& h : hogs) h.join();
  EXPECT_GT(meter.run_delay_ns(), before) << "threads sharing cores with busy ones waited no time at all";
}

}  // namespace
}  // namespace tessera
