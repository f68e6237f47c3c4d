#include "plugin/registry.hpp"

#include <algorithm>
#include <cstdlib>
#include <set>

#include <boost/dll/runtime_symbol_info.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "pipeline/param_parse.hpp"

namespace tessera {

namespace fs = std::filesystem;

std::optional<PluginFamily> parse_family(std::string_view name) {
  for (auto f : {PluginFamily::architecture, PluginFamily::attention, PluginFamily::kvcache, PluginFamily::quant,
                 PluginFamily::decoding}) {
    if (name == family_name(f)) return f;
  }
  if (name == "architecture") return PluginFamily::architecture;
  return std::nullopt;
}

std::vector<fs::path> plugin_search_path(const std::vector<fs::path>& pipeline_paths) {
  std::vector<fs::path> candidates(pipeline_paths.begin(), pipeline_paths.end());
  if (const char* env = std::getenv("TESSERA_PLUGIN_PATH")) {
    std::string_view rest = env;
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      auto part = rest.substr(0, colon);
      if (!part.empty()) candidates.emplace_back(part);
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  candidates.emplace_back(TESSERA_INSTALL_PLUGIN_DIR);
  boost::system::error_code ec;
  const fs::path exe_dir = boost::dll::program_location(ec).parent_path().string();
  if (!ec) {
    candidates.push_back(exe_dir / ".." / "lib" / "tessera" / "plugins");
    candidates.push_back(exe_dir / "plugins");
  }
  std::vector<fs::path> out;
  std::set<fs::path> seen;
  for (const auto& c : candidates) {
    std::error_code fec;
    fs::path key = fs::weakly_canonical(c, fec);
    if (fec) key = c.lexically_normal();
    if (key.has_parent_path() && key.filename().empty()) key = key.parent_path();  // drop a trailing '/'
    if (seen.insert(key).second) out.push_back(key);
  }
  return out;
}

void PluginRegistry::scan(const std::vector<fs::path>& folders) {
  for (const auto& folder : folders) {
    // A folder this registry has searched before (one registry serving several
    // pipelines) holds the libraries it already loaded: not duplicates.
    std::error_code ec;
    const auto same_folder = [&](const fs::path& earlier) { return fs::equivalent(earlier, folder, ec); };
    if (std::any_of(searched_.begin(), searched_.end(), same_folder)) {
      spdlog::debug("plugin search: {} was searched already", folder.string());
      continue;
    }
    searched_.push_back(folder);
    if (!fs::is_directory(folder, ec)) {
      spdlog::debug("plugin search: {} is not a folder, skipped", folder.string());
      continue;
    }
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(folder, ec)) {
      if (looks_like_plugin_file(entry.path())) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      Status s = add_file(file);
      if (!s.ok()) spdlog::debug("plugin search: rejected {}", s.message());
    }
  }
}

Status PluginRegistry::add_file(const fs::path& file) {
  auto loaded = load_plugin_library(file);
  if (!loaded.ok()) {
    rejections_.push_back({file, loaded.status().message()});
    return loaded.status();
  }
  return add_loaded(std::move(loaded).value());
}

Status PluginRegistry::add_loaded(std::vector<LoadedPlugin> plugins) {
  for (auto& p : plugins) {
    if (const LoadedPlugin* earlier = find(p.info->family, p.info->name)) {
      spdlog::warn("plugin {} '{}' found twice: using {}, ignoring {}", family_name(p.info->family), p.info->name,
                   earlier->file.string(), p.file.string());
      rejections_.push_back({p.file, fmt::format("{} '{}' already provided by {}", family_name(p.info->family),
                                                 p.info->name, earlier->file.string())});
      continue;
    }
    spdlog::debug("plugin {} '{}' {} from {}", family_name(p.info->family), p.info->name,
                  p.info->version ? p.info->version : "?", p.file.string());
    plugins_.push_back(std::move(p));
  }
  return Status::Ok();
}

const LoadedPlugin* PluginRegistry::find(PluginFamily family, std::string_view name) const {
  for (const auto& p : plugins_) {
    if (p.info->family == family && name == p.info->name) return &p;
  }
  return nullptr;
}

std::vector<const LoadedPlugin*> PluginRegistry::plugins() const {
  std::vector<const LoadedPlugin*> out;
  for (const auto& p : plugins_) out.push_back(&p);
  return out;
}

std::vector<const LoadedPlugin*> PluginRegistry::plugins(PluginFamily family) const {
  std::vector<const LoadedPlugin*> out;
  for (const auto& p : plugins_) {
    if (p.info->family == family) out.push_back(&p);
  }
  return out;
}

std::vector<std::string> PluginRegistry::names(PluginFamily family) const {
  std::vector<std::string> out;
  for (const auto* p : plugins(family)) out.emplace_back(p->info->name);
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::shared_ptr<PluginObject>> PluginRegistry::create_object(const LoadedPlugin& plugin,
                                                                  const ParamValues& params) const {
  std::string error;
  PluginObject* raw = nullptr;
  // The factory type is noexcept, but a third-party factory may throw anyway:
  // catch here so that a broken plugin is an error, not a crash.
  // Calling through a pointer without noexcept keeps the unwind tables that
  // let the catch below see such an exception.
  PluginObject* (*factory)(const ParamValues&, std::string*) = plugin.info->create;
  try {
    raw = factory(params, &error);
  } catch (const std::exception& e) {
    error = fmt::format("threw: {}", e.what());
  } catch (...) {
    error = "threw an unknown exception";
  }
  if (raw == nullptr) {
    return Internal(fmt::format("{} plugin '{}' ({}) could not be created: {}", family_name(plugin.info->family),
                                plugin.info->name, plugin.file.string(), error.empty() ? "no reason given" : error));
  }
  auto library = plugin.library;
  return std::shared_ptr<PluginObject>(raw, [library](PluginObject* p) { delete p; });
}

Result<ParamValues> default_params(const PluginInfo& plugin) {
  ParamValues values;
  for (size_t i = 0; i < plugin.param_count; ++i) {
    const ParamSpec& spec = plugin.params[i];
    if (spec.default_value == nullptr)
      return InvalidArgument(fmt::format("{} plugin '{}' needs a value for '{}'", family_name(plugin.family),
                                         plugin.name, spec.name));
    auto v = parse_param_literal(spec, spec.default_value);
    if (!v.ok()) return v.status();
    values.set(spec.name, std::move(v).value());
  }
  return values;
}

}  // namespace tessera
