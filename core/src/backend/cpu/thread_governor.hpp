// thread_governor.hpp: how many threads the next step uses, when other
// processes may be keeping the cores busy.
//
// Why: a step's kernels run as ~200 OpenMP parallel regions, and every region
// ends with the threads waiting for each other. On cores nobody else uses
// that wait is short, and libgomp's default (spin about a millisecond, then
// sleep) is the fastest policy. When other processes keep the cores busy, a
// thread is often waiting for a partner that is not running, and spinning
// holds the core that partner needs. Measured on two cores with one busy loop
// per core (docs/kernels.md, "OpenMP on a shared machine"): two spinning
// threads decode at ~30 tok/s and in some runs at 1-3; every finite spin
// count we tried collapses in some runs; OMP_WAIT_POLICY=passive gives 50-65
// but costs a third on idle cores; ONE thread, which never waits for a
// partner, gives 47-53. So the engine keeps the configured threads while they
// run unhindered and uses fewer while they wait for cores.
//
// The signal is the time our own threads spend runnable but not running (the
// scheduler's run delay, /proc/<pid>/task/<tid>/schedstat, field 2), as a
// share of the step's wall time per thread. It sees exactly the contention on
// the cores we run on, whatever else the host runs (a load average would see a
// whole host from inside a container pinned to two of its cores).
//
// The policy (ThreadPolicy, pure and tested alone): after kHinderedSteps
// steps in a row at t threads whose run-delay share exceeds kDropAbove, use
// t - 1 (never fewer than one). Below the configured number, try one more thread after a quiet
// spell (share under kCalmBelow); if that try is dropped again at once, wait
// twice as long before the next (up to kMaxProbeSteps), so a machine that
// stays busy pays for a try rarely.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace tessera {

class ThreadPolicy {
 public:
  static constexpr double kDropAbove = 0.2;
  static constexpr int kHinderedSteps = 3;
  static constexpr double kCalmBelow = 0.1;
  static constexpr int kFirstProbeSteps = 8;
  static constexpr int kMaxProbeSteps = 4096;
  // Steps a try of more threads must last for it to count as a success.
  static constexpr int kProbeSettleSteps = 8;

  explicit ThreadPolicy(int max_threads);

  int threads() const { return threads_; }
  // One step ran on threads() threads for wall_ns; its threads together spent
  // run_delay_ns runnable but not running.
  void step_done(uint64_t wall_ns, uint64_t run_delay_ns);

 private:
  void set_threads(int t);

  int max_threads_;
  int threads_;
  int hindered_ = 0;  // steps in a row with a run-delay share above kDropAbove
  int samples_ = 0;   // steps seen at threads_
  int probe_after_ = kFirstProbeSteps;
  int steps_to_probe_ = kFirstProbeSteps;
  bool probing_ = false;
};

// Sums the run delay of a set of threads of this process.
class RunDelayMeter {
 public:
  // The threads of this process's OpenMP team of `team` threads (found by
  // running one parallel region). Empty, and run_delay_ns() 0, where
  // schedstat cannot be read (a kernel built without it).
  explicit RunDelayMeter(int team);
  ~RunDelayMeter();
  RunDelayMeter(const RunDelayMeter&) = delete;
  RunDelayMeter& operator=(const RunDelayMeter&) = delete;

  bool available() const { return !fds_.empty(); }
  uint64_t run_delay_ns() const;

 private:
  std::vector<int> fds_;  // open schedstat files, read with pread
};

// The run delay field of a schedstat file's text ("on-cpu-ns delay-ns slices").
uint64_t parse_run_delay(std::string_view schedstat_text);

// A step-by-step thread count for the engine: ThreadPolicy fed by a
// RunDelayMeter. Not thread-safe: the engine's thread only.
class ThreadGovernor {
 public:
  explicit ThreadGovernor(int max_threads);
  // Sets omp_set_num_threads for the step about to run.
  void before_step();
  void after_step();
  int threads() const { return policy_.threads(); }
  // Steps run so far and the mean threads they used.
  int64_t steps() const { return steps_; }
  double mean_threads() const { return steps_ == 0 ? 0.0 : static_cast<double>(thread_steps_) / steps_; }

 private:
  ThreadPolicy policy_;
  RunDelayMeter meter_;
  uint64_t start_ns_ = 0, start_delay_ns_ = 0;
  int64_t steps_ = 0, thread_steps_ = 0;
};

}  // namespace tessera
