#include "cli_common.hpp"

#include <cstdio>

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace tessera::cli {

int exit_code_for(const Status& status) {
  switch (status.code()) {
    case StatusCode::ok: return kExitOk;
    case StatusCode::invalid_argument:
    case StatusCode::not_found: return kExitUsage;
    default: return kExitRuntime;
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

Result<std::vector<PipelineOverride>> parse_sets(const std::vector<std::string>& sets) {
  std::vector<PipelineOverride> out;
  for (const auto& s : sets) {
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
