// tessera bench PIPELINE [--prompt-tokens N | --prompt TEXT] [--gen-tokens N] [--repeat R] [--seed S] [--threads T] [--set k=v]...
//               [--json] [--requests N [--prompt-range A:B] [--gen-range A:B] [--max-batch-tokens N]]
#include <fmt/format.h>

#include <cstdio>

#include "cli_common.hpp"
#include "cxxopts_include.hpp"
#include "engine/bench.hpp"
#include "engine/session.hpp"

namespace tessera::cli {
namespace {
bool parse_range(const std::string& text, int32_t* lo, int32_t* hi) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) return false;
  try {
    *lo = std::stoi(text.substr(0, colon));
    *hi = std::stoi(text.substr(colon + 1));
  } catch (const std::exception&) {
    return false;
  }
  return *lo >= 1 && *lo <= *hi;
}
}  // namespace

int cmd_bench(int argc, char** argv) {
  cxxopts::Options options("tessera bench",
                           "Measure prefill and decode speed of a pipeline's model: random prompt tokens, greedy "
                           "decode, median and spread over repeats after one warm-up run.");
  options.positional_help("PIPELINE");
  options.add_options()("pipeline", "pipeline file (TOML)", cxxopts::value<std::string>())(
      "prompt-tokens", "prompt length", cxxopts::value<int32_t>()->default_value("512"))(
      "gen-tokens", "tokens generated after the prompt", cxxopts::value<int32_t>()->default_value("128"))(
      "repeat", "measured runs", cxxopts::value<int32_t>()->default_value("5"))(
      "prompt",
      "a real prompt instead of --prompt-tokens random ones (wrapped with the chat template when [run] chat is "
      "true): runs go through the scheduler, with speculative decoding when the pipeline has it",
      cxxopts::value<std::string>())(
      "requests", "batch workload: this many concurrent requests (continuous batching)", cxxopts::value<int32_t>())(
      "prompt-range", "batch workload: prompt lengths MIN:MAX", cxxopts::value<std::string>()->default_value("16:512"))(
      "gen-range", "batch workload: generation lengths MIN:MAX",
      cxxopts::value<std::string>()->default_value("16:256"))(
      "seed",
      "seed of the random workload: the prompt tokens, and with --requests the lengths (bench decodes "
      "greedily: this is not [sampling] seed)",
      cxxopts::value<uint64_t>()->default_value("1"));
  add_shared_options(options, kSetOption | kThreadsOption | kMaxBatchTokensOption | kJsonOption);
  options.parse_positional({"pipeline"});
  cxxopts::ParseResult args;
  if (auto exit = parse_command_line(options, argc, argv, &args,
                                     {"pipeline", "tessera bench needs a pipeline file (see --help)"}))
    return *exit;
  const auto batch_tokens = max_batch_tokens(args);
  if (!batch_tokens.ok()) return report(batch_tokens.status());
  BatchBenchConfig batch;
  if (!parse_range(args["prompt-range"].as<std::string>(), &batch.prompt_min, &batch.prompt_max) ||
      !parse_range(args["gen-range"].as<std::string>(), &batch.gen_min, &batch.gen_max))
    return report_usage("--prompt-range and --gen-range take MIN:MAX (for example 16:512)");
  auto overrides = shared_overrides(args);
  if (!overrides.ok()) return report(overrides.status());

  PluginRegistry registry;
  auto pipeline = load_pipeline(args["pipeline"].as<std::string>(), *overrides, registry);
  if (!pipeline.ok()) return report(pipeline.status());
  auto session = Session::open(*pipeline, registry);
  if (!session.ok()) return report(session.status());

  if (args.count("requests")) {
    batch.requests = args["requests"].as<int32_t>();
    batch.max_batch_tokens = *batch_tokens;
    batch.seed = args["seed"].as<uint64_t>();
    auto result = run_batch_bench(**session, batch);
    if (!result.ok()) return report(result.status());
    const BatchBenchReport& b = *result;
    nlohmann::json j = b.to_json();
    j["kvcache"] = pipeline->kvcache.plugin->info->name;
    if (args.count("json")) {
      fmt::print("{}\n", j.dump(2));
      return kExitOk;
    }
    fmt::print("{}\n", (*session)->describe());
    fmt::print("{} requests (prompts {}-{}, generation {}-{} tokens, seed {}): {} completed, {} failed\n",
               batch.requests, batch.prompt_min, batch.prompt_max, batch.gen_min, batch.gen_max, batch.seed,
               b.completed, b.failed);
    fmt::print("  wall time                {:10.2f} s\n", b.wall_s);
    fmt::print("  generated tokens/s       {:10.2f}   ({} tokens)\n", b.generated_tokens_per_s, b.generated_tokens);
    fmt::print("  decode tokens/s          {:10.2f}   ({} tokens in steps without a prompt chunk)\n",
               b.decode_tokens_per_s, b.decode_step_tokens);
    fmt::print("  prompt+generated tok/s   {:10.2f}   ({} prompt tokens)\n", b.total_tokens_per_s, b.prompt_tokens);
    fmt::print("  latency p50/p90/p99 ms   {:10.1f} {:10.1f} {:10.1f}\n", b.latency_p50_ms, b.latency_p90_ms,
               b.latency_p99_ms);
    fmt::print("  time to first token ms   {:10.1f} median\n", b.ttft_ms.median);
    fmt::print("  most sequences in flight {:10}\n", b.max_running);
    fmt::print("  preemptions              {:10}\n", b.preemptions);
    fmt::print("  peak KV allocated        {:10.1f} MiB, waste {:.2f}%\n",
               static_cast<double>(b.peak_kv_bytes_allocated) / (1 << 20), b.peak_kv_waste_percent);
    fmt::print("  peak memory              {:10.1f} MiB\n", static_cast<double>(b.peak_rss_bytes) / (1 << 20));
    return kExitOk;
  }

  BenchConfig config;
  config.prompt_tokens = args["prompt-tokens"].as<int32_t>();
  config.gen_tokens = args["gen-tokens"].as<int32_t>();
  config.repeat = args["repeat"].as<int32_t>();
  config.seed = args["seed"].as<uint64_t>();
  if (args.count("prompt")) {
    if (args.count("prompt-tokens")) return report_usage("--prompt and --prompt-tokens exclude each other");
    config.prompt = args["prompt"].as<std::string>();
    config.chat = pipeline->run.get_bool("chat");
  }
  const bool quiet = args.count("quiet") > 0;
  auto report_or = run_bench(**session, config, [&](int done, int total) {
    if (!quiet) fmt::print(stderr, "\rbench: run {}/{} (first is warm-up)", done, total);
  });
  if (!quiet) fmt::print(stderr, "\n");
  if (!report_or.ok()) return report(report_or.status());
  const BenchReport& r = *report_or;
  if (args.count("json")) {
    fmt::print("{}\n", r.to_json().dump(2));
    return kExitOk;
  }
  fmt::print("{}\n", (*session)->describe());
  fmt::print("prompt {} tokens ({}), generate {} tokens, {} threads (mean per step {:.2f}; {}), {} runs\n\n",
             r.config.prompt_tokens, config.prompt.empty() ? "random" : "text", config.gen_tokens, r.threads, r.mean_step_threads, r.omp_wait, config.repeat);
  fmt::print("{:<22}{:>12}{:>12}{:>12}{:>12}\n", "", "median", "stddev", "min", "max");
  auto row = [](const char* name, const BenchStat& s) {
    fmt::print("{:<22}{:>12.2f}{:>12.2f}{:>12.2f}{:>12.2f}\n", name, s.median, s.stddev, s.min, s.max);
  };
  row("prefill tokens/s", r.prefill_tokens_per_s);
  if (config.gen_tokens > 0) row("decode tokens/s", r.decode_tokens_per_s);
  row("time to first token ms", r.ttft_ms);
  if (r.prefix_hit_tokens > 0) {
    fmt::print("  {} prompt tokens of the {} runs came from the prefix cache: prefill tokens/s counts the computed "
               "ones, and the time to first token is shorter than a cold prompt's\n",
               r.prefix_hit_tokens, config.repeat);
  }
  fmt::print("{:<22}{:>12.1f}\n", "peak memory MiB", static_cast<double>(r.peak_rss_bytes) / (1 << 20));
  if (r.speculative) {
    const SpeculationStats& s = r.speculation;
    fmt::print("speculative ({}): {} drafts, {} tokens drafted, {} accepted: acceptance rate {:.1f}%, mean acceptance "
               "length {:.2f}; draft {:.0f} ms, verify {:.0f} ms over the runs{}\n",
               pipeline->speculative.get_string("method"), s.drafts, s.drafted_tokens, s.accepted_tokens,
               100.0 * s.acceptance_rate(), s.mean_acceptance_length(), s.draft_ms, s.verify_ms,
               s.requests_turned_off > 0 ? fmt::format("; turned itself off in {} of {} runs", s.requests_turned_off,
                                                       config.repeat)
                                         : std::string());
  }
  fmt::print("{:<22}{:>12.1f}   (transparent huge pages: {})\n", "on huge pages MiB",
             static_cast<double>(r.huge_page_bytes) / (1 << 20), r.thp_mode.empty() ? "unknown" : r.thp_mode);
  if (r.thp_mode == "never") {
    fmt::print("  THP is 'never': the repacked weights are on 4 KiB pages, and decode runs ~15-20% slower than with "
               "'madvise' (docs/kernels.md)\n");
  }
  if (config.gen_tokens > 0) {
    const auto step_bytes = static_cast<double>(r.weight_bytes + r.kv_read_bytes);
    const double decode_bytes_per_s = step_bytes * r.decode_tokens_per_s.median;
    fmt::print("\nread per decode step: {:.1f} MB of weights + {:.1f} MB of KV cache (mean over the steps) = {:.1f} MB"
               " -> {:.1f} GB/s at the median decode speed\n",
               static_cast<double>(r.weight_bytes) / 1e6, static_cast<double>(r.kv_read_bytes) / 1e6,
               step_bytes / 1e6, decode_bytes_per_s / 1e9);
    if (r.read_bytes_per_s > 0) {
      fmt::print("this machine reads {:.1f} GB/s now ({} threads summing 256 MiB, best of 3 passes plainly and 3 reading "
                 "ahead; plainly alone {:.1f}): decode at {:.0f}% of it\n",
                 r.read_bytes_per_s / 1e9, r.threads, r.plain_read_bytes_per_s / 1e9,
                 100.0 * decode_bytes_per_s / r.read_bytes_per_s);
    }
  }
  return kExitOk;
}

}  // namespace tessera::cli
