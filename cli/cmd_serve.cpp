// tessera serve PIPELINE [--host H] [--port N] [--api-key KEY] [--max-queue N] [--max-body-bytes N]
//                        [--model-name NAME] [--drain-seconds N] [--threads N] [--set k=v]... [--max-batch-tokens N]
//
// The OpenAI HTTP API over the pipeline (server/openai_server.hpp). The port
// is bound before the model loads, so /health answers 503 "loading" at once
// and 200 once requests are served. SIGTERM or SIGINT drains: new requests
// get 503, those in flight finish (or are cancelled after --drain-seconds),
// and the command exits 0.
#include <csignal>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli_common.hpp"
#include "cxxopts_include.hpp"
#include "engine/session.hpp"
#include "openai_server.hpp"
#include "pipeline/pipeline.hpp"
#include "plugin/registry.hpp"

namespace tessera::cli {
namespace {

// A positive integer flag, or the message saying why not.
Result<int64_t> positive(const cxxopts::ParseResult& args, const char* name, int64_t lo, int64_t hi) {
  const std::string text = args[name].as<std::string>();
  try {
    size_t used = 0;
    const long long v = std::stoll(text, &used);
    if (used == text.size() && v >= lo && v <= hi) return static_cast<int64_t>(v);
  } catch (const std::exception&) {
  }
  return InvalidArgument(fmt::format("--{} must be an integer from {} to {}, got '{}'", name, lo, hi, text));
}

}  // namespace

int cmd_serve(int argc, char** argv) {
  cxxopts::Options options("tessera serve",
                           "Serve the pipeline over the OpenAI HTTP API (completions, chat, streaming, /metrics).");
  options.positional_help("PIPELINE");
  options.add_options()("pipeline", "pipeline file (TOML)", cxxopts::value<std::string>())(
      "host", "address to listen on", cxxopts::value<std::string>()->default_value("127.0.0.1"))(
      "port", "port to listen on (0: any free port, printed)", cxxopts::value<std::string>()->default_value("8080"))(
      "api-key", "require 'Authorization: Bearer KEY' on /v1/ routes", cxxopts::value<std::string>())(
      "max-queue", "requests accepted at once, running and waiting; beyond, 429",
      cxxopts::value<std::string>()->default_value("64"))(
      "max-body-bytes", "largest request body; beyond, 413", cxxopts::value<std::string>()->default_value("8388608"))(
      "model-name", "the model id clients send (default: the model file's name without extension)",
      cxxopts::value<std::string>())(
      "drain-seconds", "on SIGTERM, how long requests in flight may take before they are cancelled",
      cxxopts::value<std::string>()->default_value("30"));
  add_shared_options(options, kSetOption | kThreadsOption | kMaxBatchTokensOption);
  options.parse_positional({"pipeline"});
  cxxopts::ParseResult args;
  if (auto exit = parse_command_line(options, argc, argv, &args, {"pipeline", "tessera serve needs a pipeline file (see --help)"}))
    return *exit;

  server::ServerOptions server_options;
  server_options.host = args["host"].as<std::string>();
  auto port = positive(args, "port", 0, 65535);
  auto max_queue = positive(args, "max-queue", 1, 100000);
  auto max_body = positive(args, "max-body-bytes", 1024, int64_t{1} << 32);
  auto drain_seconds = positive(args, "drain-seconds", 0, 86400);
  for (const auto* r : {&port, &max_queue, &max_body, &drain_seconds})
    if (!r->ok()) return report_usage(r->status().message());
  server_options.port = static_cast<int>(*port);
  server_options.max_queue = static_cast<size_t>(*max_queue);
  server_options.max_body_bytes = static_cast<size_t>(*max_body);
  if (args.count("api-key")) server_options.api_key = args["api-key"].as<std::string>();
  const auto batch_tokens = max_batch_tokens(args);
  if (!batch_tokens.ok()) return report(batch_tokens.status());
  auto overrides = shared_overrides(args);
  if (!overrides.ok()) return report(overrides.status());

  PluginRegistry registry;
  auto pipeline = load_pipeline(args["pipeline"].as<std::string>(), *overrides, registry);
  if (!pipeline.ok()) return report(pipeline.status());
  server_options.model_name = args.count("model-name") ? args["model-name"].as<std::string>()
                                                       : std::filesystem::path(pipeline->model.get_string("path")).stem().string();

  // SIGTERM and SIGINT go to one thread that waits for them (sigwait), not to
  // a handler that could interrupt any thread; blocked before threads start,
  // so that every thread inherits the mask. A write to a closed connection
  // must fail, not kill the process.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  server::OpenAiServer server(server_options);
  auto bound = server.bind();
  if (!bound.ok()) return report(bound.status());
  server.start();
  fmt::print(stderr, "tessera serve: listening on http://{}:{} (loading {})\n", server_options.host, *bound,
             pipeline->model.get_string("path"));

  auto session = Session::open(*pipeline, registry);
  if (!session.ok()) {
    server.stop();
    return report(session.status());
  }
  if (pipeline->decoding.plugin != nullptr && std::string_view(pipeline->decoding.plugin->info->name) == "greedy")
    fmt::print(stderr,
               "tessera serve: note: [decoding] plugin = \"greedy\" picks the likeliest token whatever a request's "
               "temperature, top_p or seed say; pipelines/serving.toml samples when asked (plugin \"sampling\")\n");
  SchedulerConfig config;
  config.max_batch_tokens = *batch_tokens;
  server.serve(**session, config);
  fmt::print(stderr, "tessera serve: ready, model '{}' ({}); Ctrl-C or SIGTERM drains and exits\n",
             server_options.model_name, (*session)->describe());

  int received = 0;
  sigwait(&signals, &received);
  fmt::print(stderr, "tessera serve: {} received: draining (new requests get 503, at most {} s)\n",
             received == SIGTERM ? "SIGTERM" : "SIGINT", *drain_seconds);
  const size_t cancelled = server.drain(std::chrono::seconds(*drain_seconds));
  fmt::print(stderr, "tessera serve: stopped ({} requests cancelled at the drain's end)\n", cancelled);
  return kExitOk;
}

}  // namespace tessera::cli
