// server_metrics.hpp: what GET /metrics reports, in Prometheus' text format
// (version 0.0.4): counters and histograms the server records as requests
// end, and the engine's gauges read when scraped.
//
// Names follow vLLM's where they mean the same (time to first token, time per
// output token, end-to-end latency, running and waiting requests, KV blocks),
// prefixed tessera_, so that dashboards made for one read the other.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace tessera {
struct RequestOutcome;
}

namespace tessera::server {

// The engine at one moment (EngineLoop::snapshot).
struct EngineSnapshot {
  int64_t running = 0;
  int64_t waiting = 0;  // submitted, not yet admitted (the server's queue included)
  int64_t kv_blocks_used = 0;
  int64_t kv_blocks_total = 0;
  uint64_t kv_bytes_allocated = 0;
  int64_t prefix_hit_tokens = 0;
  int64_t preemptions = 0;
  int64_t steps = 0;
  int64_t drafted_tokens = 0;
  int64_t accepted_tokens = 0;
};

// Cumulative buckets: counts[i] observations <= bounds[i], plus +Inf.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  void render(std::string& out, const std::string& name, const std::string& help) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; the last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class ServerMetrics {
 public:
  ServerMetrics();
  // A request ended (any reason); `queued_ms`: from its arrival to the engine taking it.
  void record_finished(const RequestOutcome& outcome, double queued_ms);
  // An HTTP response was sent with `status`.
  void record_response(int status);
  std::string render(const EngineSnapshot& engine) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, uint64_t> finished_;  // by finish reason ("error" for failures)
  std::map<int, uint64_t> responses_;         // by HTTP status
  uint64_t prompt_tokens_ = 0;
  uint64_t generation_tokens_ = 0;
  Histogram ttft_, tpot_, e2e_, queue_;
};

}  // namespace tessera::server
