// prefetch_choice.hpp: whether the repacked kernels prefetch the weights they
// stream, chosen while the model runs.
//
// Software prefetch a few KiB ahead of each thread's weight stream paid on
// the Intel Xeon VMs when their memory was slow to answer (a Q4_0 0.5B model
// decoded 51-54 tok/s without, 79-81 with, 2026-12-07) and cost a few per
// cent in another hour on such a VM and on an AMD EPYC VM (docs/kernels.md
// "Reading ahead"). No fixed setting is right everywhere, so in `auto` mode
// the plugin measures: every thread times its share of each decode-sized
// Linear call (the weights it streams), the two modes alternate over turns of
// such calls, the one that streamed more bytes per second is kept, and both
// are tried again every so often. Prefetching changes no result, only the time.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string_view>

namespace tessera::ggml {

enum class PrefetchMode { automatic, on, off };

// "auto", "on", "off" (the quant plugin's `prefetch` parameter); false if none.
bool parse_prefetch_mode(std::string_view text, PrefetchMode* mode);

class PrefetchChoice {
 public:
  // A turn of 1024 thread calls is about four decode steps of a 0.5B model
  // on two threads (121 Linears a step), so each turn holds a similar mix of
  // small Linears and the large output head; a trial then takes ~35 steps and
  // the winner runs ~270 before the next.
  struct Settings {
    int64_t ahead_bytes = 16 * 1024;  // how far ahead when on (docs/kernels.md)
    int calls_per_turn = 1024;        // thread calls timed in one mode before switching
    int trial_turns = 4;              // turns per mode in a trial (they alternate)
    int kept_turns = 64;              // turns the winner runs before the next trial
  };

  PrefetchChoice() : PrefetchChoice(Settings{}) {}
  explicit PrefetchChoice(Settings settings);

  // Bytes ahead the kernels prefetch now: 0 (off) or Settings::ahead_bytes.
  int64_t ahead_bytes() const { return ahead_.load(std::memory_order_relaxed); }

  // `calls` calls that streamed `bytes` of weights in `nanoseconds` (summed),
  // prefetching or not. Drives the choice in automatic mode; ignored
  // otherwise. Calls made in the other mode than the current one (a thread's
  // late report) count for their own mode but not towards the turn.
  void record(uint64_t bytes, uint64_t nanoseconds, bool prefetched, int64_t calls = 1);

  // A mode other than the current one starts it afresh (automatic: a new
  // trial); the same mode again changes nothing, so a second model loaded
  // with the same settings does not interrupt the first one's choice.
  void set_mode(PrefetchMode mode);
  PrefetchMode mode() const;

  // Trials completed, and how many of them prefetching won (for tests and docs).
  int64_t trials() const;
  int64_t trials_won_by_prefetch() const;

 private:
  void switch_to(bool prefetch);

  const Settings settings_;
  std::atomic<int64_t> ahead_;
  mutable std::mutex mutex_;
  PrefetchMode mode_ = PrefetchMode::automatic;
  bool prefetch_ = false;   // the mode the current turn runs
  bool in_trial_ = true;    // alternating (true) or running the winner (false)
  int turn_calls_ = 0;      // calls recorded in the current turn
  int turns_ = 0;           // turns done in the current trial or kept run
  uint64_t bytes_[2] = {};  // the trial's sums per mode: [0] off, [1] on
  uint64_t nanoseconds_[2] = {};
  int64_t trials_ = 0;
  int64_t trials_won_ = 0;
};

// The process's choice: one machine, one memory system, whatever the model.
PrefetchChoice& prefetch_choice();

// One thread's share of a decode-sized Linear call, for prefetch_choice():
// kept per thread and handed over every few calls, so the threads do not
// take a shared lock at every Linear of a step.
void note_streamed(uint64_t bytes, uint64_t nanoseconds, bool prefetched);

}  // namespace tessera::ggml
