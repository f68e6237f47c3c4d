#include "server_metrics.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "engine/request.hpp"
#include "openai_response.hpp"

namespace tessera::server {

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  const auto bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  ++counts_[static_cast<size_t>(bucket)];
  sum_ += value;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help) const {
  out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], cumulative);
  }
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, count_, name, sum_, name, count_);
}

namespace {

// Seconds, from a millisecond to a few minutes.
const std::vector<double> kLatencyBounds = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
                                            0.75,  1.0,   2.5,  5.0,  7.5,  10,   20,   40,   80,  160};

void counter(std::string& out, const std::string& name, const std::string& help, double value) {
  out += fmt::format("# HELP {} {}\n# TYPE {} counter\n{} {}\n", name, help, name, name, value);
}

void gauge(std::string& out, const std::string& name, const std::string& help, double value) {
  out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n{} {}\n", name, help, name, name, value);
}

}  // namespace

ServerMetrics::ServerMetrics() : ttft_(kLatencyBounds), tpot_(kLatencyBounds), e2e_(kLatencyBounds), queue_(kLatencyBounds) {}

void ServerMetrics::record_finished(const RequestOutcome& outcome, double queued_ms) {
  const RequestMetrics& m = outcome.result.metrics;
  std::lock_guard lock(mutex_);
  const std::string reason = !outcome.status.ok()             ? "error"
                             : m.stop_reason == "cancelled"    ? "cancelled"
                                                               : finish_reason_for(m.stop_reason);
  ++finished_[reason];
  prompt_tokens_ += static_cast<uint64_t>(m.prompt_tokens);
  generation_tokens_ += static_cast<uint64_t>(m.generated_tokens);
  queue_.observe(queued_ms / 1000);
  if (m.generated_tokens > 0) {
    ttft_.observe((queued_ms + m.ttft_ms) / 1000);
    e2e_.observe((queued_ms + m.ttft_ms + m.decode_ms) / 1000);
  }
  if (m.generated_tokens > 1) tpot_.observe(m.ms_per_token() / 1000);
}

void ServerMetrics::record_response(int status) {
  std::lock_guard lock(mutex_);
  ++responses_[status];
}

std::string ServerMetrics::render(const EngineSnapshot& e) const {
  std::string out;
  gauge(out, "tessera_requests_running", "Requests the engine is running.", static_cast<double>(e.running));
  gauge(out, "tessera_requests_waiting", "Requests accepted and waiting for the engine.", static_cast<double>(e.waiting));
  gauge(out, "tessera_kv_blocks_used", "KV cache blocks in use.", static_cast<double>(e.kv_blocks_used));
  gauge(out, "tessera_kv_blocks_free", "KV cache blocks free.",
        static_cast<double>(std::max<int64_t>(0, e.kv_blocks_total - e.kv_blocks_used)));
  gauge(out, "tessera_kv_bytes_allocated", "Bytes of sequence memory held by live sequences.",
        static_cast<double>(e.kv_bytes_allocated));
  counter(out, "tessera_prefix_cache_hit_tokens_total", "Prompt tokens served from the prefix cache.",
          static_cast<double>(e.prefix_hit_tokens));
  counter(out, "tessera_preemptions_total", "Requests preempted (recomputed later) for want of memory.",
          static_cast<double>(e.preemptions));
  counter(out, "tessera_engine_steps_total", "Forward steps the engine ran.", static_cast<double>(e.steps));
  counter(out, "tessera_spec_decode_draft_tokens_total", "Draft tokens verified (speculative decoding).",
          static_cast<double>(e.drafted_tokens));
  counter(out, "tessera_spec_decode_accepted_tokens_total", "Draft tokens accepted (speculative decoding).",
          static_cast<double>(e.accepted_tokens));

  std::lock_guard lock(mutex_);
  counter(out, "tessera_prompt_tokens_total", "Prompt tokens of the requests that ended.",
          static_cast<double>(prompt_tokens_));
  counter(out, "tessera_generation_tokens_total", "Tokens generated for the requests that ended.",
          static_cast<double>(generation_tokens_));
  out += "# HELP tessera_request_finished_total Requests that ended, by finish reason.\n"
         "# TYPE tessera_request_finished_total counter\n";
  for (const auto& [reason, n] : finished_)
    out += fmt::format("tessera_request_finished_total{{finish_reason=\"{}\"}} {}\n", reason, n);
  out += "# HELP tessera_http_responses_total HTTP responses, by status.\n"
         "# TYPE tessera_http_responses_total counter\n";
  for (const auto& [status, n] : responses_)
    out += fmt::format("tessera_http_responses_total{{code=\"{}\"}} {}\n", status, n);
  ttft_.render(out, "tessera_time_to_first_token_seconds", "From arrival to the first generated token.");
  tpot_.render(out, "tessera_time_per_output_token_seconds", "Mean time per generated token after the first.");
  e2e_.render(out, "tessera_e2e_request_latency_seconds", "From arrival to the last generated token.");
  queue_.render(out, "tessera_request_queue_time_seconds", "From arrival to the engine taking the request.");
  return out;
}

}  // namespace tessera::server
