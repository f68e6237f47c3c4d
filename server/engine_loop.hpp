// engine_loop.hpp: the continuous-batching scheduler on a thread of its own,
// fed by many HTTP threads.
//
// HTTP threads submit requests and read their text through a RequestHandle;
// the engine thread alone touches the Scheduler and the Session's model. It
// takes new requests and cancellations between steps (so a cancelled
// request's memory is free before the next step), steps while any request is
// in flight, and sleeps otherwise. Admission control is a bound on requests
// in flight (running and queued): beyond it submit() refuses at once (429),
// rather than letting latency grow without limit.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/scheduler.hpp"
#include "engine/session.hpp"
#include "server_metrics.hpp"

namespace tessera::server {

// One request's way back from the engine: text as it is produced, then the
// outcome. Shared by the HTTP thread that reads it and the engine thread.
class RequestHandle {
 public:
  struct Update {
    std::string text;       // text produced since the last wait
    bool finished = false;  // the outcome is ready (all text taken)
  };
  // Returns at once when text or the end is there, else waits up to `timeout`.
  Update wait(std::chrono::milliseconds timeout);
  // The request's outcome; valid once wait() has said finished.
  const RequestOutcome& outcome() const { return outcome_; }

 private:
  friend class EngineLoop;
  void append(std::string_view text);
  void finish(const RequestOutcome& outcome);

  std::mutex mutex_;
  std::condition_variable cv_;
  std::string pending_;
  size_t streamed_bytes_ = 0;  // text handed out through append()
  bool finished_ = false;
  RequestOutcome outcome_;
  GenerationRequest request_;  // until the engine takes it
  Clock::time_point arrived_;
  double queued_ms_ = 0;
  size_t index_ = SIZE_MAX;  // in the Scheduler; engine thread only
};

class EngineLoop {
 public:
  // `max_in_flight`: requests accepted at once, running and waiting (>= 1).
  EngineLoop(Session& session, SchedulerConfig config, size_t max_in_flight);
  ~EngineLoop();  // cancels what is left and joins the engine thread
  EngineLoop(const EngineLoop&) = delete;
  EngineLoop& operator=(const EngineLoop&) = delete;

  // Queues a request (its prompt already checked against the context).
  // out_of_memory when max_in_flight are in flight (HTTP 429), unavailable
  // once draining (503).
  Result<std::shared_ptr<RequestHandle>> submit(GenerationRequest request);
  // Ends a request early (its client went away); harmless once it has ended.
  void cancel(const std::shared_ptr<RequestHandle>& handle);
  // Draining: submit() refuses from now on.
  void stop_accepting() { accepting_ = false; }
  // Cancels every request in flight (the end of a drain).
  void cancel_all();
  size_t in_flight() const { return in_flight_; }
  EngineSnapshot snapshot() const;
  ServerMetrics& metrics() { return metrics_; }

 private:
  void run();
  // One pass of the engine thread: new requests, cancellations, a step.
  void turn(std::vector<std::shared_ptr<RequestHandle>> arrivals,
            std::vector<std::shared_ptr<RequestHandle>> cancellations, bool cancel_everything);
  void on_done(const RequestOutcome& outcome);
  // The model or a plugin failed: every request in flight ends with `status`
  // and a fresh scheduler takes over.
  void fail_all(const Status& status);
  void take_snapshot();

  Session& session_;
  SchedulerConfig config_;
  const size_t max_in_flight_;
  ServerMetrics metrics_;
  std::unique_ptr<Scheduler> scheduler_;                         // engine thread only
  std::map<size_t, std::shared_ptr<RequestHandle>> active_;      // engine thread only
  std::vector<size_t> ended_;                                    // to forget after the step
  EngineSnapshot retired_;  // counters of schedulers replaced after a failure (Prometheus counters never go down)

  mutable std::mutex mutex_;  // guards the inbox below and the snapshot
  std::condition_variable wake_;
  std::vector<std::shared_ptr<RequestHandle>> arrivals_, cancellations_;
  bool cancel_everything_ = false;
  bool stopping_ = false;
  EngineSnapshot snapshot_;

  std::atomic<size_t> in_flight_{0};
  std::atomic<bool> accepting_{true};
  std::thread thread_;
};

}  // namespace tessera::server
