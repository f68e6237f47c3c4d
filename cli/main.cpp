// tessera: the command line. Thin by design: each subcommand parses its
// arguments and calls the core, so that tests can make the same calls.
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "backend/cpu/omp_wait.hpp"
#include "backend/devices.hpp"
#include "cli_common.hpp"
#include "version.hpp"

namespace {

struct Subcommand {
  const char* name;
  tessera::cli::Command run;
  const char* help;
};

constexpr Subcommand kSubcommands[] = {
    {"run", tessera::cli::cmd_run, "run a pipeline: generate text and report metrics"},
    {"plugins", tessera::cli::cmd_plugins, "list the plugins found, or describe one"},
    {"inspect", tessera::cli::cmd_inspect, "describe a model file"},
    {"bench", tessera::cli::cmd_bench, "measure prefill and decode speed"},
    {"perplexity", tessera::cli::cmd_perplexity, "perplexity of a text, scored as llama.cpp does"},
    {"serve", tessera::cli::cmd_serve, "serve a pipeline over the OpenAI HTTP API"},
    {"quantize", tessera::cli::cmd_quantize, "quantize a model's weights (round-to-nearest, GPTQ, AWQ, INT8) into a new GGUF"},
    {"convert", tessera::cli::cmd_convert, "write a Hugging Face safetensors folder as a GGUF file"},
};

void print_usage() {
  fmt::print("usage: tessera <command> [options]\n\ncommands:\n");
  for (const auto& s : kSubcommands) fmt::print("  {:<12}{}\n", s.name, s.help);
  fmt::print("\n`tessera <command> --help` describes a command. Exit codes: 0 ok, 1 runtime error, 2 usage error.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_usage();
    return tessera::cli::kExitUsage;
  }
  const std::string_view command = argv[1];
  if (command == "-h" || command == "--help" || command == "help") {
    print_usage();
    return tessera::cli::kExitOk;
  }
  if (command == "--version" || command == "version") {
    fmt::print("tessera {}\n", tessera::version());
    fmt::print("cpu: {}\n", tessera::cpu_features().summary());
    fmt::print("openmp wait: {}\n", tessera::omp_wait_setting());
    fmt::print("cuda: {}\n", tessera::cuda_status().summary());
    return tessera::cli::kExitOk;
  }
  for (const auto& s : kSubcommands) {
    if (command == s.name) return s.run(argc - 1, argv + 1);
  }
  fmt::print(stderr, "error: unknown command '{}'\n", command);
  print_usage();
  return tessera::cli::kExitUsage;
}
