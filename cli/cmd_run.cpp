// tessera run PIPELINE [--prompt TEXT] [--max-tokens N] [--seed N] [--threads N] [--set k=v]... [--metrics-json PATH]
//                      [--prompts-file FILE [--output FILE] [--max-batch-tokens N]]
#include <fmt/format.h>

#include <cstdio>
#include <optional>

#include "batch_requests.hpp"
#include "batch_run.hpp"
#include "cli_common.hpp"
#include "cxxopts_include.hpp"
#include "engine/session.hpp"
#include "output_file.hpp"
#include "pipeline/pipeline.hpp"
#include "plugin/registry.hpp"

namespace tessera::cli {

int cmd_run(int argc, char** argv) {
  cxxopts::Options options("tessera run", "Run a pipeline: generate text, stream it to stdout, report metrics.");
  options.positional_help("PIPELINE");
  options.add_options()("pipeline", "pipeline file (TOML)", cxxopts::value<std::string>())(
      "prompt", "prompt text (overrides [run] prompt)", cxxopts::value<std::string>())(
      "max-tokens", "most tokens to generate (overrides [run] max_tokens)", cxxopts::value<std::string>())(
      "seed", "sampling seed (overrides [sampling] seed)", cxxopts::value<std::string>())(
      "metrics-json", "write the metrics as one JSON object to this file", cxxopts::value<std::string>())(
      "prompts-file", "run many requests concurrently: one prompt per line, or JSONL with per-request settings",
      cxxopts::value<std::string>())(
      "output", "with several requests (--prompts-file or [run] prompts): write one JSON line per request to this file",
      cxxopts::value<std::string>());
  add_shared_options(options, kSetOption | kThreadsOption | kMaxBatchTokensOption);
  options.parse_positional({"pipeline"});
  cxxopts::ParseResult args;
  if (auto exit = parse_command_line(
          options, argc, argv, &args,
          {"pipeline", "tessera run needs a pipeline file (see --help)", "a prompt goes after --prompt"}))
    return *exit;
  const auto batch_tokens = max_batch_tokens(args);
  if (!batch_tokens.ok()) return report(batch_tokens.status());

  auto shared = shared_overrides(args);
  if (!shared.ok()) return report(shared.status());
  std::vector<PipelineOverride> overrides = std::move(shared).value();
  if (args.count("prompt")) overrides.push_back({"run", "prompt", args["prompt"].as<std::string>(), true});
  if (args.count("max-tokens")) overrides.push_back({"run", "max_tokens", args["max-tokens"].as<std::string>()});
  if (args.count("seed")) overrides.push_back({"sampling", "seed", args["seed"].as<std::string>()});

  PluginRegistry registry;
  auto pipeline = load_pipeline(args["pipeline"].as<std::string>(), overrides, registry);
  if (!pipeline.ok()) return report(pipeline.status());

  // Usage mistakes the pipeline decides, and the files written at the end:
  // all found here, before Session::open loads the model.
  const bool batch = args.count("prompts-file") > 0 || !pipeline->run.get_list("prompts").empty();
  if (args.count("output") && !batch)
    return report_usage(
        "--output writes one JSON line per request and only applies with --prompts-file or [run] prompts; "
        "for a single prompt, --metrics-json writes its metrics");
  std::optional<OutputFile> output, metrics;
  if (args.count("output")) {
    auto file = OutputFile::check(args["output"].as<std::string>(), "the results");
    if (!file.ok()) return report(file.status());
    output = std::move(file).value();
  }
  if (args.count("metrics-json")) {
    auto file = OutputFile::check(args["metrics-json"].as<std::string>(), "metrics");
    if (!file.ok()) return report(file.status());
    metrics = std::move(file).value();
  }

  auto session = Session::open(*pipeline, registry);
  if (!session.ok()) return report(session.status());
  const GenerationRequest request = (*session)->request_from_pipeline();
  if (batch) {
    std::vector<GenerationRequest> requests;
    if (args.count("prompts-file")) {
      auto read = read_prompts_file(args["prompts-file"].as<std::string>(), request);
      if (!read.ok()) return report(read.status());
      requests = std::move(read).value();
    } else {
      for (const auto& prompt : pipeline->run.get_list("prompts")) {
        requests.push_back(request);
        requests.back().prompt = prompt;
      }
    }
    BatchOptions options_for_batch;
    options_for_batch.max_batch_tokens = *batch_tokens;
    options_for_batch.output = output ? &*output : nullptr;
    options_for_batch.metrics_json = metrics ? &*metrics : nullptr;
    options_for_batch.quiet = args.count("quiet") > 0;
    options_for_batch.speculative = pipeline->speculative;
    return run_batch(**session, requests, options_for_batch);
  }
  const bool stream = pipeline->run.get_bool("stream");
  auto result = (*session)->generate(request, [&](std::string_view text) {
    if (!stream) return;
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  });
  if (!result.ok()) return report(result.status());
  if (!stream) std::fwrite(result->text.data(), 1, result->text.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);

  const RequestMetrics& m = result->metrics;
  const uint64_t peak = peak_rss_bytes();
  if (!args.count("quiet")) {
    if (m.stop_reason == "eos" && m.generated_tokens == 0)
      fmt::print(stderr, "note: the model ended its answer at once (end-of-sequence was the first token)\n");
    fmt::print(stderr,
               "prompt {} tokens, generated {} ({}) | ttft {:.1f} ms | prefill {:.1f} tok/s | decode {:.1f} tok/s, "
               "{:.2f} ms/token | peak memory {:.1f} MiB\n",
               m.prompt_tokens, m.generated_tokens, m.stop_reason, m.ttft_ms, m.prefill_tokens_per_s(),
               m.decode_tokens_per_s(), m.ms_per_token(), static_cast<double>(peak) / (1 << 20));
    if ((*session)->draft_proposer() != nullptr) print_speculation((*session)->last_speculation(), pipeline->speculative);
  }
  if (metrics) {
    nlohmann::json j = m.to_json();
    j["peak_rss_bytes"] = peak;
    j["threads"] = (*session)->threads();
    j["plugins"] = (*session)->plugin_stats();
    if ((*session)->draft_proposer() != nullptr) {
      j["speculation"] = (*session)->last_speculation().to_json();
      j["speculation"]["method"] = pipeline->speculative.get_string("method");
    }
    if (auto written = metrics->write(j.dump(2) + "\n"); !written.ok()) return report(written);
  }
  return kExitOk;
}

}  // namespace tessera::cli
