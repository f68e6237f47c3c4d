// tessera perplexity PIPELINE --text FILE [--ctx N] [--chunks N] [--threads N] [--set k=v]... [--json]
#include <fmt/format.h>

#include <cstdio>

#include "cli_common.hpp"
#include "cxxopts_include.hpp"
#include "engine/perplexity.hpp"
#include "engine/session.hpp"
#include "io/read_file.hpp"

namespace tessera::cli {

int cmd_perplexity(int argc, char** argv) {
  cxxopts::Options options("tessera perplexity",
                           "Perplexity of a text under the pipeline's model, scored as llama.cpp's perplexity tool "
                           "does: windows of --ctx tokens, the second half of each scored.");
  options.positional_help("PIPELINE");
  options.add_options()("pipeline", "pipeline file (TOML)", cxxopts::value<std::string>())(
      "text", "text file to score", cxxopts::value<std::string>())("ctx", "window length in tokens",
                                                                   cxxopts::value<int64_t>()->default_value("512"))(
      "chunks", "score at most this many windows (0: all)", cxxopts::value<int64_t>()->default_value("0"));
  add_shared_options(options, kSetOption | kThreadsOption | kJsonOption);
  options.parse_positional({"pipeline"});
  cxxopts::ParseResult args;
  if (auto exit =
          parse_command_line(options, argc, argv, &args,
                             {"pipeline", "tessera perplexity needs a pipeline file and --text FILE (see --help)",
                              "the text to score goes after --text"}))
    return *exit;
  if (!args.count("text")) return report_usage("tessera perplexity needs a pipeline file and --text FILE (see --help)");

  const std::string text_path = args["text"].as<std::string>();
  const auto text = read_file(text_path, "text file");
  if (!text.ok()) return report(text.status());

  auto overrides = shared_overrides(args);
  if (!overrides.ok()) return report(overrides.status());
  PluginRegistry registry;
  auto pipeline = load_pipeline(args["pipeline"].as<std::string>(), *overrides, registry);
  if (!pipeline.ok()) return report(pipeline.status());
  auto session = Session::open(*pipeline, registry);
  if (!session.ok()) return report(session.status());

  const bool quiet = args.count("quiet") > 0;
  auto result =
      compute_perplexity(**session, *text, args["ctx"].as<int64_t>(), args["chunks"].as<int64_t>(),
                         [&](int64_t done, int64_t total, double running) {
                           if (quiet) return;
                           const int width = 30;
                           const int filled = static_cast<int>(width * done / total);
                           fmt::print(stderr, "\r[{}{}] {}/{} windows, ppl so far {:.4f}", std::string(filled, '#'),
                                      std::string(width - filled, '.'), done, total, running);
                         });
  if (!quiet) fmt::print(stderr, "\n");
  if (!result.ok()) return report(result.status());
  if (args.count("json")) {
    fmt::print("{}\n", result->to_json().dump(2));
  } else {
    fmt::print("ppl = {:.4f} +/- {:.4f} over {} scored tokens ({} windows of {}, text of {} tokens)\n", result->ppl,
               result->ppl_uncertainty, result->scored_tokens, result->windows, result->ctx, result->text_tokens);
  }
  return kExitOk;
}

}  // namespace tessera::cli
