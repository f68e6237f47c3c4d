// cli_common.hpp: what every `tessera` subcommand shares: exit codes, logging,
// errors, the flags several commands take, and the parsing of the command line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cxxopts_include.hpp"
#include "engine/speculation_stats.hpp"
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

// One stderr line of what speculative decoding did: drafts, acceptance, time
// drafting and verifying, whether it turned itself off.
void print_speculation(const SpeculationStats& stats, const ParamValues& speculative);

// -v/-q handling shared by the subcommands.
void configure_logging(bool verbose, bool quiet);

// The flags more than one subcommand takes. Each is declared in one place
// (add_shared_options), so that its name, type and help are the same in every
// command that takes it. -v/--verbose, -q/--quiet and -h/--help, which every
// command takes, are added by parse_command_line.
enum SharedOption : unsigned {
  kSetOption = 1u << 0,             // --set section.key=value, repeatable (run, bench, perplexity)
  kThreadsOption = 1u << 1,         // --threads N: overrides [run] threads (run, bench, perplexity)
  kMaxBatchTokensOption = 1u << 2,  // --max-batch-tokens N, at least 1 (run, bench)
  kJsonOption = 1u << 3,            // --json: the results as one JSON object on stdout (bench, perplexity, inspect)
};
void add_shared_options(cxxopts::Options& options, unsigned which);

// The pipeline overrides the shared flags make: each --set, then --threads as
// [run] threads. Both are validated by load_pipeline like the file.
Result<std::vector<PipelineOverride>> shared_overrides(const cxxopts::ParseResult& args);

// --threads alone, as [run] threads (none without it): for a second pipeline
// that should run like the first but take none of its --set edits.
std::vector<PipelineOverride> threads_override(const cxxopts::ParseResult& args);

// --max-batch-tokens; below 1 is refused (a step that may take no token never
// finishes a batch).
Result<int32_t> max_batch_tokens(const cxxopts::ParseResult& args);

// What a command takes besides its options.
struct CommandSyntax {
  const char* positional = nullptr;  // the option its one positional argument fills (null: none)
  const char* missing = nullptr;     // the message when that argument is absent
  const char* extra_hint = nullptr;  // added to the message about arguments left over (may be null)
  const char* second_positional = nullptr;  // a second one after it (quantize's OUTPUT), also required
};

// Adds -v/--verbose, -q/--quiet and -h/--help, parses, and handles --help.
// Refuses (exit 2, one message): parse errors; an option that takes a value
// followed by another option of the command instead of one ("--prompt
// --max-tokens 5"; "--prompt=--text" passes such text); positional arguments
// beyond the command's one ("run a.toml b.toml"); a missing positional.
// Configures logging. Returns the exit code to return at once, or nullopt to
// go on with *args.
std::optional<int> parse_command_line(cxxopts::Options& options, int argc, char** argv, cxxopts::ParseResult* args,
                                      const CommandSyntax& syntax = {});

using Command = int (*)(int argc, char** argv);
int cmd_run(int argc, char** argv);
int cmd_plugins(int argc, char** argv);
int cmd_inspect(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_perplexity(int argc, char** argv);
int cmd_serve(int argc, char** argv);
int cmd_quantize(int argc, char** argv);
int cmd_convert(int argc, char** argv);

}  // namespace tessera::cli
