#include "cli_common.hpp"

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>

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

Result<std::vector<PipelineOverride>> parse_sets(const cxxopts::ParseResult& args) {
  std::vector<PipelineOverride> out;
  if (!args.count("set")) return out;
  for (const auto& s : args["set"].as<std::vector<std::string>>()) {
    auto o = parse_override(s);
    if (!o.ok()) return o.status();
    out.push_back(std::move(o).value());
  }
  return out;
}

void configure_logging(bool verbose, bool quiet) {
  auto logger = spdlog::stderr_color_mt("tessera");
  logger->set_pattern("%^%l%$: %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(verbose ? spdlog::level::debug : quiet ? spdlog::level::err : spdlog::level::info);
}

}  // namespace tessera::cli

namespace tessera::cli {

std::optional<int> parse_command_line(cxxopts::Options& options, int argc, char** argv, cxxopts::ParseResult* args,
                                      const char* required, const char* missing_message, const char* quiet_help) {
  options.add_options()("v,verbose", "debug logging")("q,quiet", quiet_help)("h,help", "show this help");
  try {
    *args = options.parse(argc, argv);
  } catch (const std::exception& e) {
    return report_usage(e.what());
  }
  if (args->count("help")) {
    fmt::print("{}\n", options.help());
    return kExitOk;
  }
  if (required != nullptr && !args->count(required)) return report_usage(missing_message);
  configure_logging(args->count("verbose") > 0, args->count("quiet") > 0);
  return std::nullopt;
}

}  // namespace tessera::cli
