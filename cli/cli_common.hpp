// cli_common.hpp: what every `tessera` subcommand shares: exit codes, logging, errors.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cxxopts_include.hpp"
#include "pipeline/pipeline.hpp"
#include "tessera/status.hpp"

namespace tessera::cli {

// Exit codes: 0 success, 1 runtime error, 2 usage or configuration error.
enum ExitCode : int { kExitOk = 0, kExitRuntime = 1, kExitUsage = 2 };

// Configuration mistakes (bad flags, bad pipeline, unknown plugin) exit 2;
// everything else that fails exits 1.
int exit_code_for(const Status& status);

// Prints "error: <message>" to stderr and returns the exit code for it.
int report(const Status& status);
int report_usage(const std::string& message);

// -v/-q handling shared by the subcommands.
void configure_logging(bool verbose, bool quiet);

// The --set values of a command line as pipeline overrides.
Result<std::vector<PipelineOverride>> parse_sets(const cxxopts::ParseResult& args);

// Adds -v/--verbose, -q/--quiet and -h/--help, parses, handles --help and
// parse errors, checks that `required` (a positional, may be null) is there,
// and configures logging. Returns the exit code to return at once, or nullopt
// to go on with *args.
std::optional<int> parse_command_line(cxxopts::Options& options, int argc, char** argv, cxxopts::ParseResult* args,
                                      const char* required = nullptr, const char* missing_message = nullptr,
                                      const char* quiet_help = "only errors on stderr");

using Command = int (*)(int argc, char** argv);
int cmd_run(int argc, char** argv);
int cmd_plugins(int argc, char** argv);
int cmd_inspect(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_perplexity(int argc, char** argv);

}  // namespace tessera::cli
