// bench.hpp: `tessera bench`: prefill and decode speed, measured over repeats.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/session.hpp"
#include "engine/speculation_stats.hpp"

namespace tessera {

struct BenchConfig {
  int32_t prompt_tokens = 512;  // random token ids, seeded
  int32_t gen_tokens = 128;     // each fed back as the argmax of the last logits
  int32_t repeat = 5;           // measured runs, after one warm-up run
  uint64_t seed = 1;
  bool measure_bandwidth = true;  // also measure the machine's read bandwidth (~0.1 s)
  // A real prompt instead of random tokens (prompt_tokens is then its
  // length): each run goes through the scheduler with the pipeline's
  // decoding strategy and [sampling], gen_tokens exactly, with speculative
  // decoding when the pipeline asks for it. Drafts need
  // text worth predicting; random tokens are not.
  std::string prompt = {};
  bool chat = false;  // wrap `prompt` with the model's chat template
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
  // K and V the attention reads per decode step, averaged over the steps (the
  // step at position p reads p + 1 positions of every layer), plus a
  // recurrent model's fixed state: the rest of the numerator. It grows with
  // the context: with 128 generated tokens on SmolLM2-135M's f32 cache, 3.7 MB
  // after a 16-token prompt, 27 MB after 512.
  uint64_t kv_read_bytes = 0;
  // The machine's read bandwidth measured right after the runs (gen_tokens > 0
  // and BenchConfig::measure_bandwidth): the roofline's denominator, now.
  double read_bytes_per_s = 0;
  // The same probe's best plain pass (no software prefetch): well below
  // read_bytes_per_s where the hardware prefetchers alone fall short.
  double plain_read_bytes_per_s = 0;
  // This process's memory on transparent huge pages after the runs (the
  // repacked weights ask for them), and the machine's THP mode ("" unknown).
  uint64_t huge_page_bytes = 0;
  std::string thp_mode;
  // How OpenMP threads wait between regions ("GOMP_SPINCOUNT=30000", ...):
  // on a shared machine it moves decode speed by 2x (backend/cpu/omp_wait.hpp).
  std::string omp_wait;
  // The mean threads a step used ([run] adapt_threads; = threads without it).
  double mean_step_threads = 0;
  // Speculative decoding over the measured runs (with a prompt and a
  // [speculative] pipeline), and whether it ran.
  bool speculative = false;
  SpeculationStats speculation;
  // Prompt tokens of the measured runs served by the prefix cache (a text
  // prompt's repeats); the prefill rate counts only the computed ones.
  int64_t prefix_hit_tokens = 0;
  nlohmann::json to_json() const;
};

// Runs the configured workload `repeat` times on fresh sequences. Errors if the
// prompt plus generation does not fit the context.
Result<BenchReport> run_bench(Session& session, const BenchConfig& config,
                              const std::function<void(int done, int total)>& progress = {});

}  // namespace tessera

namespace tessera {

// A batch workload: `requests` requests with prompt and generation lengths
// drawn uniformly from the ranges (seeded), random prompt tokens, every
// request generating exactly its length (end-of-sequence ignored), all
// submitted at once to the continuous-batching scheduler.
struct BatchBenchConfig {
  int32_t requests = 64;
  int32_t prompt_min = 16, prompt_max = 512;
  int32_t gen_min = 16, gen_max = 256;
  int32_t max_batch_tokens = 512;
  uint64_t seed = 1;
};

struct BatchBenchReport {
  BatchBenchConfig config;
  int threads = 0;
  int64_t completed = 0, failed = 0;
  int64_t prompt_tokens = 0, generated_tokens = 0;
  double wall_s = 0;
  double generated_tokens_per_s = 0;  // generated tokens over the wall time (prefill included)
  double decode_tokens_per_s = 0;     // tokens of the decode-only steps over their time
  int64_t decode_step_tokens = 0;
  double total_tokens_per_s = 0;      // prompt + generated over the wall time
  BenchStat latency_ms;               // submit -> last token, per request
  double latency_p50_ms = 0, latency_p90_ms = 0, latency_p99_ms = 0;
  BenchStat ttft_ms;
  int64_t max_running = 0;
  int64_t preemptions = 0;
  uint64_t peak_kv_bytes_allocated = 0;
  double peak_kv_waste_percent = 0;
  uint64_t peak_rss_bytes = 0;
  nlohmann::json to_json() const;
};

Result<BatchBenchReport> run_batch_bench(Session& session, const BatchBenchConfig& config);

}  // namespace tessera
