// tessera run PIPELINE [--prompt TEXT] [--max-tokens N] [--seed N] [--set k=v]... [--metrics-json PATH]
#include <fmt/format.h>

#include <cstdio>
#include <fstream>

#include "batch_requests.hpp"
#include "batch_run.hpp"
#include "cli_common.hpp"
#include "cxxopts_include.hpp"
#include "engine/session.hpp"
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
      "set", "override any key: section.key=value (repeatable)", cxxopts::value<std::vector<std::string>>())(
      "metrics-json", "write the metrics as one JSON object to this file", cxxopts::value<std::string>())(
      "prompts-file", "run many requests concurrently: one prompt per line, or JSONL with per-request settings",
      cxxopts::value<std::string>())("output", "with several requests: write one JSON line per request to this file",
                                     cxxopts::value<std::string>())(
      "max-batch-tokens", "tokens one forward step may take (continuous batching)",
      cxxopts::value<int32_t>()->default_value("512"));
  options.parse_positional({"pipeline"});
  cxxopts::ParseResult args;
  if (auto exit =
          parse_command_line(options, argc, argv, &args, "pipeline", "tessera run needs a pipeline file (see --help)",
                             "only errors on stderr, no metrics summary"))
    return *exit;

  auto sets = parse_sets(args);
  if (!sets.ok()) return report(sets.status());
  std::vector<PipelineOverride> overrides = std::move(sets).value();
  if (args.count("prompt")) overrides.push_back({"run", "prompt", args["prompt"].as<std::string>(), true});
  if (args.count("max-tokens")) overrides.push_back({"run", "max_tokens", args["max-tokens"].as<std::string>()});
  if (args.count("seed")) overrides.push_back({"sampling", "seed", args["seed"].as<std::string>()});

  PluginRegistry registry;
  auto pipeline = load_pipeline(args["pipeline"].as<std::string>(), overrides, registry);
  if (!pipeline.ok()) return report(pipeline.status());

  auto session = Session::open(*pipeline, registry);
  if (!session.ok()) return report(session.status());
  const GenerationRequest request = (*session)->request_from_pipeline();
  if (args.count("prompts-file") || !pipeline->run.get_list("prompts").empty()) {
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
    BatchOptions batch;
    batch.max_batch_tokens = args["max-batch-tokens"].as<int32_t>();
    if (args.count("output")) batch.output = args["output"].as<std::string>();
    if (args.count("metrics-json")) batch.metrics_json = args["metrics-json"].as<std::string>();
    batch.quiet = args.count("quiet") > 0;
    return run_batch(**session, requests, batch);
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
  }
  if (args.count("metrics-json")) {
    nlohmann::json j = m.to_json();
    j["peak_rss_bytes"] = peak;
    j["threads"] = (*session)->threads();
    j["plugins"] = (*session)->plugin_stats();
    std::ofstream out(args["metrics-json"].as<std::string>());
    if (!out)
      return report(
          InvalidArgument(fmt::format("cannot write metrics to '{}'", args["metrics-json"].as<std::string>())));
    out << j.dump(2) << "\n";
  }
  return kExitOk;
}

}  // namespace tessera::cli
