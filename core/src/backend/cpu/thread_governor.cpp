#include "backend/cpu/thread_governor.hpp"

#include <fcntl.h>
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <string>

namespace tessera {

ThreadPolicy::ThreadPolicy(int max_threads) : max_threads_(std::max(1, max_threads)), threads_(max_threads_) {}

void ThreadPolicy::set_threads(int t) {
  threads_ = std::clamp(t, 1, max_threads_);
  hindered_ = 0;
  samples_ = 0;
}

void ThreadPolicy::step_done(uint64_t wall_ns, uint64_t run_delay_ns) {
  if (wall_ns == 0) return;
  const double share =
      std::min(1.0, static_cast<double>(run_delay_ns) / (static_cast<double>(wall_ns) * threads_));
  ++samples_;
  // A neighbour's burst does not drop a thread, a run of hindered steps
  // does: on an idle two-core VM about one decode step in 60 showed a share
  // of 0.1-0.2 (once 0.21), never two in a row; under load every step does.
  hindered_ = share > kDropAbove ? hindered_ + 1 : 0;
  if (threads_ > 1 && hindered_ >= kHinderedSteps) {
    if (probing_) probe_after_ = std::min(2 * probe_after_, kMaxProbeSteps);  // the try failed
    probing_ = false;
    steps_to_probe_ = probe_after_;
    set_threads(threads_ - 1);
    return;
  }
  if (probing_ && samples_ >= kProbeSettleSteps) {
    probing_ = false;  // the try held: the cores are ours again
    probe_after_ = kFirstProbeSteps;
    steps_to_probe_ = probe_after_;
  }
  if (threads_ < max_threads_ && !probing_) {
    if (share < kCalmBelow) --steps_to_probe_;
    if (steps_to_probe_ <= 0) {
      probing_ = true;
      set_threads(threads_ + 1);
    }
  }
}

uint64_t parse_run_delay(std::string_view text) {
  const size_t space = text.find(' ');
  if (space == std::string_view::npos) return 0;
  const std::string_view rest = text.substr(space + 1);
  uint64_t delay = 0;
  std::from_chars(rest.data(), rest.data() + rest.size(), delay);
  return delay;
}

RunDelayMeter::RunDelayMeter(int team) {
  team = std::max(1, team);
  std::vector<long> tids(static_cast<size_t>(team), 0);
#pragma omp parallel num_threads(team)
  tids[static_cast<size_t>(omp_get_thread_num())] = syscall(SYS_gettid);
  for (const long tid : tids) {
    if (tid == 0) continue;
    const std::string path = "/proc/self/task/" + std::to_string(tid) + "/schedstat";
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      for (const int f : fds_) close(f);
      fds_.clear();
      return;
    }
    fds_.push_back(fd);
  }
}

RunDelayMeter::~RunDelayMeter() {
  for (const int fd : fds_) close(fd);
}

uint64_t RunDelayMeter::run_delay_ns() const {
  uint64_t total = 0;
  char buf[128];
  for (const int fd : fds_) {
    const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n > 0) total += parse_run_delay(std::string_view(buf, static_cast<size_t>(n)));
  }
  return total;
}

namespace {
uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}
}  // namespace

ThreadGovernor::ThreadGovernor(int max_threads) : policy_(max_threads), meter_(max_threads) {}

void ThreadGovernor::before_step() {
  omp_set_num_threads(policy_.threads());
  start_ns_ = now_ns();
  start_delay_ns_ = meter_.run_delay_ns();
}

void ThreadGovernor::after_step() {
  ++steps_;
  thread_steps_ += policy_.threads();
  if (!meter_.available()) return;
  const uint64_t delay = meter_.run_delay_ns() - start_delay_ns_;
  const uint64_t wall = now_ns() - start_ns_;
  policy_.step_done(wall, delay);
}

}  // namespace tessera
