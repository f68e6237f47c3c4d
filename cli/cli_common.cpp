#include "cli_common.hpp"

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cctype>
#include <cstdio>
#include <map>
#include <string_view>

namespace tessera::cli {

int exit_code_for(const Status& status) {
  switch (status.code()) {
    case StatusCode::ok:
      return kExitOk;
    case StatusCode::invalid_argument:
    case StatusCode::not_found:
      return kExitUsage;
    default:
      return kExitRuntime;
  }
}

int report(const Status& status) {
  if (status.ok()) return kExitOk;
  fmt::print(stderr, "error: {}\n", status.message());
  return exit_code_for(status);
}

int report_usage(const std::string& message) {
  fmt::print(stderr, "error: {}\n", message);
  return kExitUsage;
}

void configure_logging(bool verbose, bool quiet) {
  auto logger = spdlog::stderr_color_mt("tessera");
  logger->set_pattern("%^%l%$: %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(verbose ? spdlog::level::debug : quiet ? spdlog::level::err : spdlog::level::info);
}

void add_shared_options(cxxopts::Options& options, unsigned which) {
  auto add = options.add_options();
  if (which & kSetOption)
    add("set", "override any key: section.key=value (repeatable)", cxxopts::value<std::vector<std::string>>());
  if (which & kThreadsOption)
    add("threads", "CPU threads (overrides [run] threads; 0: one per core)", cxxopts::value<int32_t>());
  if (which & kMaxBatchTokensOption)
    add("max-batch-tokens", "with several requests: tokens one forward step may take, at least 1 (continuous batching)",
        cxxopts::value<int32_t>()->default_value("512"));
  if (which & kJsonOption) add("json", "print the results as one JSON object on stdout instead of text");
}

Result<std::vector<PipelineOverride>> shared_overrides(const cxxopts::ParseResult& args) {
  std::vector<PipelineOverride> out;
  if (args.count("set")) {
    for (const auto& s : args["set"].as<std::vector<std::string>>()) {
      auto o = parse_override(s);
      if (!o.ok()) return o.status();
      out.push_back(std::move(o).value());
    }
  }
  for (PipelineOverride& o : threads_override(args)) out.push_back(std::move(o));
  return out;
}

std::vector<PipelineOverride> threads_override(const cxxopts::ParseResult& args) {
  if (!args.count("threads")) return {};
  return {{"run", "threads", std::to_string(args["threads"].as<int32_t>())}};
}

Result<int32_t> max_batch_tokens(const cxxopts::ParseResult& args) {
  const auto n = args["max-batch-tokens"].as<int32_t>();
  if (n < 1)
    return InvalidArgument(
        fmt::format("--max-batch-tokens must be at least 1 (the tokens one forward step may take), not {}", n));
  return n;
}

namespace {

// The command's options as they are written ("--prompt", "-q"): whether each
// takes a value (the next argument, unless given as --name=value), and its
// long form.
struct OptionShape {
  bool takes_value = false;
  std::string long_form;
};
std::map<std::string, OptionShape, std::less<>> option_table(const cxxopts::Options& options) {
  std::map<std::string, OptionShape, std::less<>> table;
  for (const auto& group : options.groups()) {
    for (const auto& o : options.group_help(group).options) {
      const OptionShape shape{!o.is_boolean && !o.has_implicit, o.l.empty() ? "-" + o.s : "--" + o.l.front()};
      for (const auto& name : o.l) table["--" + name] = shape;
      if (!o.s.empty()) table["-" + o.s] = shape;
    }
  }
  return table;
}

// cxxopts gives an option that takes a value the next argument whatever it is,
// so "--prompt --max-tokens 5" makes the prompt "--max-tokens" (and 5 a stray
// argument). Returns the message for the first option whose value is written
// as another option of the command ("--max-tokens", "--set=a.b=1", "-q"), or "".
std::string value_that_is_an_option(const cxxopts::Options& options, int argc, char** argv) {
  const auto table = option_table(options);
  auto names_an_option = [&](std::string_view arg) {
    if (arg.size() < 2 || arg[0] != '-') return false;
    if (arg[1] == '-') arg = arg.substr(0, arg.find('='));
    return table.find(arg) != table.end();
  };
  for (int i = 1; i + 1 < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;  // the rest is positional
    if (arg.size() < 2 || arg[0] != '-') continue;
    std::string flag;  // the option that takes argv[i + 1] as its value, if any
    if (arg[1] == '-') {
      if (arg.find('=') != std::string_view::npos) continue;  // --name=value
      flag = std::string(arg);
    } else {
      // -abc: grouped short options; the last may take the next argument, one
      // before it takes the rest of the group instead.
      for (size_t j = 1; j < arg.size(); ++j) {
        const std::string short_flag = std::string("-") + arg[j];
        const auto it = table.find(short_flag);
        if (it == table.end() || !it->second.takes_value) continue;
        if (j + 1 == arg.size()) flag = short_flag;
        break;
      }
    }
    const auto it = table.find(flag);
    if (it == table.end() || !it->second.takes_value) continue;
    const std::string_view value = argv[i + 1];
    if (names_an_option(value)) {
      const std::string_view dashes = value.substr(0, value[1] == '-' ? 2 : 1);
      return fmt::format("{} needs a value; '{}' is an option. To pass text starting with '{}', write {}={}text", flag,
                         value, dashes, it->second.long_form, dashes);
    }
    ++i;  // that argument is the value
  }
  return "";
}

}  // namespace

std::optional<int> parse_command_line(cxxopts::Options& options, int argc, char** argv, cxxopts::ParseResult* args,
                                      const CommandSyntax& syntax) {
  options.add_options()("v,verbose", "debug logging")("q,quiet", "only errors on stderr (no progress or summary)")(
      "h,help", "show this help");
  // Before cxxopts parses: it would take the option as the value, or fail to
  // read it as a number with a less helpful message.
  if (const std::string message = value_that_is_an_option(options, argc, argv); !message.empty())
    return report_usage(message);
  try {
    *args = options.parse(argc, argv);
  } catch (const std::exception& e) {
    return report_usage(e.what());
  }
  if (args->count("help")) {
    fmt::print("{}\n", options.help());
    return kExitOk;
  }
  if (const auto& extra = args->unmatched(); !extra.empty()) {
    std::string list;
    for (const auto& e : extra) list += fmt::format("{}'{}'", list.empty() ? "" : ", ", e);
    std::string takes = fmt::format("{} takes no arguments besides its options", options.program());
    auto upper = [](std::string name) {
      for (auto& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      return name;
    };
    if (syntax.positional != nullptr) takes = fmt::format("{} takes one {}", options.program(), upper(syntax.positional));
    if (syntax.second_positional != nullptr) takes += fmt::format(" and one {}", upper(syntax.second_positional));
    if (syntax.extra_hint != nullptr) takes += fmt::format("; {}", syntax.extra_hint);
    return report_usage(
        fmt::format("unexpected argument{} {}: {} (see --help)", extra.size() > 1 ? "s" : "", list, takes));
  }
  for (const char* positional : {syntax.positional, syntax.second_positional}) {
    if (positional != nullptr && !args->count(positional))
      return report_usage(syntax.missing != nullptr ? syntax.missing : "a required argument is missing (see --help)");
  }
  configure_logging(args->count("verbose") > 0, args->count("quiet") > 0);
  return std::nullopt;
}

void print_speculation(const SpeculationStats& s, const ParamValues& speculative) {
  fmt::print(stderr,
             "speculative {}: {} drafts, {} tokens drafted, {} accepted ({:.1f}%), mean acceptance length {:.2f} | "
             "draft {:.0f} ms, verify {:.0f} ms{}\n",
             speculative.get_string("method"), s.drafts, s.drafted_tokens, s.accepted_tokens,
             100.0 * s.acceptance_rate(), s.mean_acceptance_length(), s.draft_ms, s.verify_ms,
             s.requests_turned_off > 0
                 ? fmt::format(" | turned itself off for {} request{} (drafts did not pay)", s.requests_turned_off,
                               s.requests_turned_off == 1 ? "" : "s")
                 : std::string());
}

}  // namespace tessera::cli
