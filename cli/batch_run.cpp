#include "batch_run.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_common.hpp"
#include "engine/bench.hpp"
#include "engine/scheduler.hpp"

namespace tessera::cli {

int run_batch(Session& session, std::vector<GenerationRequest> requests, const BatchOptions& options) {
  SchedulerConfig config;
  config.max_batch_tokens = options.max_batch_tokens;
  Scheduler scheduler(session, config);
  for (auto& r : requests) scheduler.submit(std::move(r));
  auto outcomes = scheduler.run();
  if (!outcomes.ok()) return report(outcomes.status());

  int failed = 0;
  std::vector<double> latency;
  for (const auto& o : *outcomes) {
    if (!o.status.ok()) {
      ++failed;
      fmt::print(stderr, "error: request {}: {}\n", o.index, o.status.message());
      continue;
    }
    fmt::print("--- request {} ---\n{}\n", o.index, o.result.text);
    latency.push_back(o.result.metrics.ttft_ms + o.result.metrics.decode_ms);
  }
  const SchedulerStats& s = scheduler.stats();
  const BenchStat lat = BenchStat::of(latency);
  if (!options.quiet) {
    fmt::print(stderr,
               "{} requests ({} failed) | {} tokens in {:.1f} s: {:.1f} tok/s | {} steps, at most {} in flight, "
               "{} preemptions | peak KV {:.1f} MiB, waste {:.1f}% | peak memory {:.1f} MiB\n",
               outcomes->size(), failed, s.generated_tokens, s.wall_ms / 1000, s.to_json()["tokens_per_s"].get<double>(),
               s.steps, s.max_running, s.preemptions, static_cast<double>(s.peak_kv_bytes_allocated) / (1 << 20),
               s.peak_kv_waste_percent, static_cast<double>(peak_rss_bytes()) / (1 << 20));
    if (session.draft_proposer() != nullptr) print_speculation(s.speculation, options.speculative);
  }
  if (options.output != nullptr) {
    std::string lines;
    for (const auto& o : *outcomes) lines += o.to_json().dump() + "\n";
    if (auto written = options.output->write(lines); !written.ok()) return report(written);
  }
  if (options.metrics_json != nullptr) {
    nlohmann::json j = s.to_json();
    j["requests"] = outcomes->size();
    j["failed"] = failed;
    j["latency_ms"] = lat.to_json();
    j["peak_rss_bytes"] = peak_rss_bytes();
    j["threads"] = session.threads();
    j["plugins"] = session.plugin_stats();
    if (auto written = options.metrics_json->write(j.dump(2) + "\n"); !written.ok()) return report(written);
  }
  return failed > 0 ? kExitRuntime : kExitOk;
}

}  // namespace tessera::cli
