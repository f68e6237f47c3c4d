// metrics.hpp: what users measure: latency, throughput, memory.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera {

using Clock = std::chrono::steady_clock;

inline double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Peak resident set size of this process, in bytes (getrusage).
uint64_t peak_rss_bytes();

// One request's figures. Field names are the --metrics-json contract
// (docs/cli.md); append, never rename.
struct RequestMetrics {
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  std::vector<int32_t> token_ids;   // generated ids
  double ttft_ms = 0;               // request start -> first generated token chosen
  double prefill_ms = 0;
  double decode_ms = 0;             // after the first token, to the last
  std::string stop_reason;          // "eos", "stop" (a stop string), "max_tokens", "context_full", "cancelled"
  uint64_t seed = 0;
  int64_t drafted_tokens = 0;       // speculative decoding: draft tokens verified
  int64_t accepted_tokens = 0;      // and accepted
  int64_t draft_steps = 0;          // steps that verified drafts
  bool speculation_turned_off = false;  // drafting stopped paying for this request at some point

  double prefill_tokens_per_s() const { return prefill_ms > 0 ? prompt_tokens * 1000.0 / prefill_ms : 0; }
  // Tokens after the first, over the time they took (the first comes with prefill).
  double decode_tokens_per_s() const {
    return decode_ms > 0 && generated_tokens > 1 ? (generated_tokens - 1) * 1000.0 / decode_ms : 0;
  }
  double ms_per_token() const { return generated_tokens > 1 ? decode_ms / (generated_tokens - 1) : 0; }

  nlohmann::json to_json() const;
};

}  // namespace tessera
