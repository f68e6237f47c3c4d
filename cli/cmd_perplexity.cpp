// tessera perplexity PIPELINE --text FILE [--ctx N] [--chunks N] [--reference PIPELINE] [--threads N] [--set k=v]...
//                    [--json]
#include <fmt/format.h>

#include <cstdio>
#include <optional>

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
      "chunks", "score at most this many windows (0: all)", cxxopts::value<int64_t>()->default_value("0"))(
      "reference",
      "a second pipeline (the float model a quantized file came from) scored on the same windows: report the KL "
      "divergence from its next-token distributions, the paired perplexity ratio and how often the top tokens agree",
      cxxopts::value<std::string>());
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
  // The reference takes --threads, so that both models run alike, but not
  // --set: `--set model.path=Q.gguf` names the model under test alone. Both
  // files are read before either model loads, so that a mistake in the
  // second costs no wait.
  std::optional<Pipeline> reference_pipeline;
  const std::string reference_path = args.count("reference") ? args["reference"].as<std::string>() : "";
  const auto about_reference = [&](const Status& s) {
    return Status(s.code(), fmt::format("--reference {}: {}", reference_path, s.message()));
  };
  if (!reference_path.empty()) {
    auto loaded = load_pipeline(reference_path, threads_override(args), registry);
    if (!loaded.ok()) return report(about_reference(loaded.status()));
    reference_pipeline = std::move(*loaded);
  }
  auto session = Session::open(*pipeline, registry);
  if (!session.ok()) return report(session.status());
  std::unique_ptr<Session> reference;
  if (reference_pipeline) {
    auto opened = Session::open(*reference_pipeline, registry);
    if (!opened.ok()) return report(about_reference(opened.status()));
    reference = std::move(*opened);
  }

  const bool quiet = args.count("quiet") > 0;
  auto result = compute_perplexity(
      **session, *text, args["ctx"].as<int64_t>(), args["chunks"].as<int64_t>(),
      [&](int64_t done, int64_t total, double running) {
        if (quiet) return;
        const int width = 30;
        const int filled = static_cast<int>(width * done / total);
        fmt::print(stderr, "\r[{}{}] {}/{} windows, ppl so far {:.4f}", std::string(filled, '#'),
                   std::string(width - filled, '.'), done, total, running);
      },
      reference.get());
  if (!quiet) fmt::print(stderr, "\n");
  if (!result.ok()) return report(result.status());
  if (args.count("json")) {
    fmt::print("{}\n", result->to_json().dump(2));
  } else {
    fmt::print("ppl = {:.4f} +/- {:.4f} over {} scored tokens ({} windows of {}, text of {} tokens)\n", result->ppl,
               result->ppl_uncertainty, result->scored_tokens, result->windows, result->ctx, result->text_tokens);
    if (const auto& c = result->against_reference) {
      fmt::print("reference ppl = {:.4f} +/- {:.4f}; ppl / reference ppl = {:.5f} +/- {:.5f} (paired)\n",
                 c->reference_ppl, c->reference_ppl_uncertainty, c->ppl_ratio, c->ppl_ratio_uncertainty);
      fmt::print(
          "KL divergence from the reference = {:.6f} +/- {:.6f} nats a token (median {:.6f}, 99th percentile "
          "{:.6f}, max {:.6f}); same top token {:.2f}%\n",
          c->mean_kl_divergence, c->kl_divergence_uncertainty, c->median_kl_divergence, c->p99_kl_divergence,
          c->max_kl_divergence, 100.0 * c->same_top_token);
      fmt::print("mean entropy of the next-token distributions = {:.5f} nats, the reference's {:.5f} (difference "
                 "{:+.5f} +/- {:.5f}, paired)\n",
                 c->mean_entropy, c->reference_mean_entropy, c->mean_entropy - c->reference_mean_entropy,
                 c->entropy_difference_uncertainty);
    }
  }
  return kExitOk;
}

}  // namespace tessera::cli
