// prefetch_choice.cpp: the prefetch policy (prefetch_choice.hpp) and the
// per-thread hand-over of the calls' timings.
#include "prefetch_choice.hpp"

namespace tessera::ggml {

bool parse_prefetch_mode(std::string_view text, PrefetchMode* mode) {
  if (text == "auto") {
    *mode = PrefetchMode::automatic;
  } else if (text == "on") {
    *mode = PrefetchMode::on;
  } else if (text == "off") {
    *mode = PrefetchMode::off;
  } else {
    return false;
  }
  return true;
}

PrefetchChoice::PrefetchChoice(Settings settings) : settings_(settings), ahead_(0) {}

void PrefetchChoice::switch_to(bool prefetch) {
  prefetch_ = prefetch;
  ahead_.store(prefetch ? settings_.ahead_bytes : 0, std::memory_order_relaxed);
}

void PrefetchChoice::set_mode(PrefetchMode mode) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (mode == mode_) return;
  mode_ = mode;
  in_trial_ = true;
  turn_calls_ = turns_ = 0;
  bytes_[0] = bytes_[1] = nanoseconds_[0] = nanoseconds_[1] = 0;
  switch_to(mode == PrefetchMode::on);
}

PrefetchMode PrefetchChoice::mode() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return mode_;
}

int64_t PrefetchChoice::trials() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return trials_;
}

int64_t PrefetchChoice::trials_won_by_prefetch() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return trials_won_;
}

void PrefetchChoice::record(uint64_t bytes, uint64_t nanoseconds, bool prefetched, int64_t calls) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (mode_ != PrefetchMode::automatic) return;
  if (in_trial_) {
    bytes_[prefetched ? 1 : 0] += bytes;
    nanoseconds_[prefetched ? 1 : 0] += nanoseconds;
  }
  if (prefetched != prefetch_) return;
  turn_calls_ += calls;
  if (turn_calls_ < settings_.calls_per_turn) return;
  turn_calls_ = 0;
  ++turns_;
  if (!in_trial_) {
    if (turns_ < settings_.kept_turns) return;
    // Try both again: the host's memory may have changed since.
    in_trial_ = true;
    turns_ = 0;
    bytes_[0] = bytes_[1] = nanoseconds_[0] = nanoseconds_[1] = 0;
    switch_to(!prefetch_);
    return;
  }
  if (turns_ < 2 * settings_.trial_turns) {
    switch_to(!prefetch_);  // alternate, so a drifting host weighs on both alike
    return;
  }
  // Bytes per nanosecond, compared without division: on wins only if faster.
  const bool on_wins = static_cast<double>(bytes_[1]) * static_cast<double>(nanoseconds_[0]) >
                       static_cast<double>(bytes_[0]) * static_cast<double>(nanoseconds_[1]);
  ++trials_;
  if (on_wins) ++trials_won_;
  in_trial_ = false;
  turns_ = 0;
  switch_to(on_wins);
}

PrefetchChoice& prefetch_choice() {
  static PrefetchChoice choice;
  return choice;
}

void note_streamed(uint64_t bytes, uint64_t nanoseconds, bool prefetched) {
  // 16 calls: a lock per thread every few Linears instead of at every one
  // (SmolLM2's step is ~150 Linears in ~3 ms on two threads).
  constexpr int64_t kCallsPerReport = 16;
  struct Pending {
    uint64_t bytes = 0, nanoseconds = 0;
    int64_t calls = 0;
    bool prefetched = false;
  };
  thread_local Pending pending;
  if (pending.calls > 0 && pending.prefetched != prefetched) {
    prefetch_choice().record(pending.bytes, pending.nanoseconds, pending.prefetched, pending.calls);
    pending = Pending{};
  }
  pending.bytes += bytes;
  pending.nanoseconds += nanoseconds;
  pending.prefetched = prefetched;
  if (++pending.calls < kCallsPerReport) return;
  prefetch_choice().record(pending.bytes, pending.nanoseconds, pending.prefetched, pending.calls);
  pending = Pending{};
}

}  // namespace tessera::ggml
