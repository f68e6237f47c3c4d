// bench.hpp: `tessera bench`: prefill and decode speed, measured over repeats.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/session.hpp"

namespace tessera {

struct BenchConfig {
  int32_t prompt_tokens = 512;  // random token ids, seeded
  int32_t gen_tokens = 128;     // each fed back as the argmax of the last logits
  int32_t repeat = 5;           // measured runs, after one warm-up run
  uint64_t seed = 1;
};

// median, spread and extremes of one figure over the repeats.
struct BenchStat {
  double median = 0, mean = 0, stddev = 0, min = 0, max = 0;
  static BenchStat of(std::vector<double> samples);
  nlohmann::json to_json() const;
};

struct BenchReport {
  BenchConfig config;
  int threads = 0;
  BenchStat prefill_tokens_per_s;
  BenchStat decode_tokens_per_s;
  BenchStat ttft_ms;  // prefill of the prompt: the first token comes from its logits
  uint64_t peak_rss_bytes = 0;
  uint64_t weight_bytes = 0;  // read per decode step: the roofline's numerator
  nlohmann::json to_json() const;
};

// Runs the configured workload `repeat` times on fresh sequences. Errors if the
// prompt plus generation does not fit the context.
Result<BenchReport> run_bench(Session& session, const BenchConfig& config,
                              const std::function<void(int done, int total)>& progress = {});

}  // namespace tessera
