#include "engine_loop.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace tessera::server {

RequestHandle::Update RequestHandle::wait(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  cv_.wait_for(lock, timeout, [&] { return !pending_.empty() || finished_; });
  Update u;
  u.text.swap(pending_);
  u.finished = finished_;
  if (finished_) {
    // Text the engine did not stream (the stream decoder's last bytes, a
    // tail the stop strings held) is in the outcome only.
    const std::string& all = outcome_.result.text;
    if (all.size() > streamed_bytes_) u.text += all.substr(streamed_bytes_);
    streamed_bytes_ = all.size();
  }
  return u;
}

void RequestHandle::append(std::string_view text) {
  {
    std::lock_guard lock(mutex_);
    pending_.append(text);
    streamed_bytes_ += text.size();
  }
  cv_.notify_all();
}

void RequestHandle::finish(const RequestOutcome& outcome) {
  {
    std::lock_guard lock(mutex_);
    outcome_ = outcome;
    finished_ = true;
  }
  cv_.notify_all();
}

EngineLoop::EngineLoop(Session& session, SchedulerConfig config, size_t max_in_flight)
    : session_(session),
      config_(config),
      max_in_flight_(std::max<size_t>(1, max_in_flight)),
      scheduler_(std::make_unique<Scheduler>(session, config)) {
  take_snapshot();
  thread_ = std::thread([this] { run(); });
}

EngineLoop::~EngineLoop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

Result<std::shared_ptr<RequestHandle>> EngineLoop::submit(GenerationRequest request) {
  if (!accepting_) return Unavailable("the server is shutting down and takes no new request");
  // Reserve a place first, so that concurrent submissions cannot overshoot.
  size_t n = in_flight_.load();
  do {
    if (n >= max_in_flight_)
      return OutOfMemory(fmt::format("{} requests are in flight, the most this server accepts at once "
                                     "(--max-queue); retry later",
                                     n));
  } while (!in_flight_.compare_exchange_weak(n, n + 1));
  auto handle = std::make_shared<RequestHandle>();
  handle->request_ = std::move(request);
  handle->arrived_ = Clock::now();
  {
    std::lock_guard lock(mutex_);
    arrivals_.push_back(handle);
  }
  wake_.notify_all();
  return handle;
}

void EngineLoop::cancel(const std::shared_ptr<RequestHandle>& handle) {
  {
    std::lock_guard lock(mutex_);
    cancellations_.push_back(handle);
  }
  wake_.notify_all();
}

void EngineLoop::cancel_all() {
  {
    std::lock_guard lock(mutex_);
    cancel_everything_ = true;
  }
  wake_.notify_all();
}

EngineSnapshot EngineLoop::snapshot() const {
  std::lock_guard lock(mutex_);
  EngineSnapshot s = snapshot_;
  s.waiting += static_cast<int64_t>(arrivals_.size());
  return s;
}

void EngineLoop::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] {
      return stopping_ || !arrivals_.empty() || !cancellations_.empty() || cancel_everything_ || scheduler_->busy();
    });
    if (stopping_) break;
    auto arrivals = std::move(arrivals_);
    auto cancellations = std::move(cancellations_);
    const bool everything = cancel_everything_;
    arrivals_.clear();
    cancellations_.clear();
    cancel_everything_ = false;
    lock.unlock();
    turn(std::move(arrivals), std::move(cancellations), everything);
    lock.lock();
  }
  // Shutting down: whatever is left ends now, its readers told.
  auto arrivals = std::move(arrivals_);
  arrivals_.clear();
  lock.unlock();
  turn(std::move(arrivals), {}, /*cancel_everything=*/true);
}

void EngineLoop::turn(std::vector<std::shared_ptr<RequestHandle>> arrivals,
                      std::vector<std::shared_ptr<RequestHandle>> cancellations, bool cancel_everything) {
  const auto done = [this](const RequestOutcome& o) { on_done(o); };
  for (auto& h : arrivals) {
    h->queued_ms_ = ms_between(h->arrived_, Clock::now());
    h->index_ = scheduler_->submit(std::move(h->request_));
    active_[h->index_] = h;
    if (scheduler_->done(h->index_)) on_done(scheduler_->outcome(h->index_));  // refused at once
  }
  for (auto& h : cancellations) {
    if (h->index_ != SIZE_MAX && active_.count(h->index_) != 0) scheduler_->cancel(h->index_, done);
  }
  if (cancel_everything) {
    std::vector<size_t> indices;
    for (const auto& [index, h] : active_) indices.push_back(index);
    for (size_t index : indices) scheduler_->cancel(index, done);
  }
  if (scheduler_->busy()) {
    const Status status = scheduler_->step(
        [this](size_t index, std::string_view text) {
          if (auto it = active_.find(index); it != active_.end()) it->second->append(text);
        },
        done);
    if (!status.ok()) fail_all(status);
  }
  for (size_t index : ended_) scheduler_->forget(index);
  ended_.clear();
  take_snapshot();
}

void EngineLoop::on_done(const RequestOutcome& outcome) {
  auto it = active_.find(outcome.index);
  if (it == active_.end()) return;
  std::shared_ptr<RequestHandle> h = it->second;
  active_.erase(it);
  ended_.push_back(outcome.index);
  metrics_.record_finished(outcome, h->queued_ms_);
  // The place is free before the reader hears of the end: a client that has
  // read a stream's last chunk and sends its next request at once must find
  // room (under load the reader could otherwise write [DONE] before this
  // thread got to the decrement, and --max-queue 1 answered that client 429).
  --in_flight_;
  h->finish(outcome);
}

void EngineLoop::fail_all(const Status& status) {
  spdlog::error("the engine failed; the {} requests in flight end with the error: {}", active_.size(),
                status.message());
  auto active = std::move(active_);
  active_.clear();
  for (auto& [index, h] : active) {
    RequestOutcome outcome = scheduler_->outcome(index);
    outcome.status = status;
    metrics_.record_finished(outcome, h->queued_ms_);
    --in_flight_;  // before the reader hears, as in on_done
    h->finish(outcome);
  }
  ended_.clear();
  // The counters go on from the old scheduler's figures.
  const SchedulerStats& old = scheduler_->stats();
  retired_.preemptions += old.preemptions;
  retired_.steps += old.steps;
  retired_.drafted_tokens += old.speculation.drafted_tokens;
  retired_.accepted_tokens += old.speculation.accepted_tokens;
  // The old scheduler frees the memory its sequences held.
  scheduler_ = std::make_unique<Scheduler>(session_, config_);
}

void EngineLoop::take_snapshot() {
  const MemoryStats memory = session_.memory().stats();
  const SchedulerStats& stats = scheduler_->stats();
  std::lock_guard lock(mutex_);
  snapshot_.running = static_cast<int64_t>(scheduler_->running());
  snapshot_.waiting = static_cast<int64_t>(scheduler_->waiting());
  snapshot_.kv_blocks_used = memory.blocks_used;
  snapshot_.kv_blocks_total = memory.blocks_total;
  snapshot_.kv_bytes_allocated = memory.bytes_allocated;
  snapshot_.prefix_hit_tokens = memory.prefix_hit_tokens;
  snapshot_.preemptions = retired_.preemptions + stats.preemptions;
  snapshot_.steps = retired_.steps + stats.steps;
  snapshot_.drafted_tokens = retired_.drafted_tokens + stats.speculation.drafted_tokens;
  snapshot_.accepted_tokens = retired_.accepted_tokens + stats.speculation.accepted_tokens;
}

}  // namespace tessera::server
