// tessera plugins [--path DIR]... [--describe NAME]
#include <fmt/format.h>


#include "backend/devices.hpp"
#include "cli_common.hpp"
#include "cxxopts_include.hpp"
#include "params/param_parse.hpp"
#include "pipeline/pipeline.hpp"
#include "plugin/registry.hpp"

namespace tessera::cli {
namespace {

void print_params(const ParamSpec* params, size_t count) {
  if (count == 0) {
    fmt::print("  (no parameters)\n");
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    const ParamSpec& s = params[i];
    std::string constraint;
    if (s.min_value <= s.max_value) constraint = fmt::format(" in [{}, {}]", s.min_value, s.max_value);
    if (s.choices) {
      std::string c = s.choices;
      for (auto& ch : c)
        if (ch == '|') ch = ',';
      constraint = fmt::format(" one of {{{}}}", c);
    }
    fmt::print("  {:<20} {}{}, default {}\n      {}\n", s.name, param_type_name(s.type), constraint,
               s.default_value ? s.default_value : "(required)", s.doc ? s.doc : "");
  }
}

int describe(const PluginRegistry& registry, const std::string& name) {
  for (const auto& section : core_sections()) {
    if (name == section.name) {
      fmt::print("[{}]  (core section) {}\n", section.name, section.doc);
      print_params(section.params, section.count);
      return kExitOk;
    }
  }
  std::vector<const LoadedPlugin*> matches;
  for (const auto* p : registry.plugins()) {
    const std::string qualified = fmt::format("{}/{}", family_name(p->info->family), p->info->name);
    if (name == p->info->name || name == qualified) matches.push_back(p);
  }
  if (matches.empty()) return report_usage(fmt::format("no plugin named '{}' was found (see `tessera plugins`)", name));
  if (matches.size() > 1) {
    std::string list;
    for (const auto* p : matches) list += fmt::format(" {}/{}", family_name(p->info->family), p->info->name);
    return report_usage(fmt::format("'{}' is ambiguous; name one of:{}", name, list));
  }
  const LoadedPlugin* p = matches.front();
  fmt::print("{} plugin '{}' {}\n  {}\n  file: {}\n  ABI {}.{}\nparameters:\n", family_name(p->info->family),
             p->info->name, p->info->version ? p->info->version : "", p->info->description ? p->info->description : "",
             p->file.string(), kAbiMajor, p->abi_minor);
  print_params(p->info->params, p->info->param_count);
  return kExitOk;
}

}  // namespace

int cmd_plugins(int argc, char** argv) {
  cxxopts::Options options("tessera plugins",
                           "List the plugins found on the search path, or describe one. With -v the listing adds the "
                           "folders searched and every rejected file with its reason.");
  options.add_options()("describe", "print a plugin's (or a core section's) parameters", cxxopts::value<std::string>())(
      "path", "extra plugin folder, searched first (repeatable)", cxxopts::value<std::vector<std::string>>());
  cxxopts::ParseResult args;
  if (auto exit = parse_command_line(options, argc, argv, &args,
                                     {nullptr, nullptr, "to describe a plugin, name it after --describe"}))
    return *exit;

  std::vector<std::filesystem::path> extra;
  if (args.count("path")) {
    for (const auto& p : args["path"].as<std::vector<std::string>>()) extra.emplace_back(p);
  }
  PluginRegistry registry;
  registry.scan(plugin_search_path(extra));

  if (args.count("describe")) return describe(registry, args["describe"].as<std::string>());

  fmt::print("{:<10} {:<16} {:<9} {}\n", "FAMILY", "NAME", "VERSION", "FILE");
  for (const auto* p : registry.plugins()) {
    fmt::print("{:<10} {:<16} {:<9} {}\n", family_name(p->info->family), p->info->name,
               p->info->version ? p->info->version : "", p->file.string());
  }
  // Whether the GPU path can run here, and if not why, in one line.
  fmt::print("\ncuda: {}\n", cuda_status().summary());
  // Files that look like plugins but were not loaded, always: a plugin that
  // silently fails to appear is the hardest mistake to find.
  if (!registry.rejections().empty()) fmt::print("\nfound but not loaded:\n");
  for (const auto& r : registry.rejections()) fmt::print("  {}\n", r.reason);
  if (args.count("verbose")) {
    fmt::print("\nsearched, in order:\n");
    for (const auto& f : registry.searched()) fmt::print("  {}\n", f.string());
  }
  return kExitOk;
}

}  // namespace tessera::cli
