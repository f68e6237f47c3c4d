#include "plugin/registry.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <set>

#include <boost/dll/runtime_symbol_info.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "params/param_parse.hpp"

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

std::vector<PluginFolder> plugin_search_path(const std::vector<fs::path>& pipeline_paths) {
  std::vector<PluginFolder> candidates(pipeline_paths.begin(), pipeline_paths.end());
  if (const char* env = std::getenv("TESSERA_PLUGIN_PATH")) {
    std::string_view rest = env;
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      auto part = rest.substr(0, colon);
      if (!part.empty()) candidates.emplace_back(fs::path(part));
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  candidates.emplace_back(TESSERA_INSTALL_PLUGIN_DIR, false);
  boost::system::error_code ec;
  const fs::path exe_dir = boost::dll::program_location(ec).parent_path().string();
  if (!ec) {
    candidates.emplace_back(exe_dir / ".." / "lib" / "tessera" / "plugins", false);
    candidates.emplace_back(exe_dir / "plugins", false);
  }
  std::vector<PluginFolder> out;
  std::set<fs::path> seen;
  for (const auto& c : candidates) {
    std::error_code fec;
    fs::path key = fs::weakly_canonical(c.path, fec);
    if (fec) key = c.path.lexically_normal();
    if (key.has_parent_path() && key.filename().empty()) key = key.parent_path();  // drop a trailing '/'
    if (seen.insert(key).second) out.emplace_back(key, c.named_by_user);
  }
  return out;
}

void PluginRegistry::scan(const std::vector<PluginFolder>& folders) {
  for (const auto& [folder, named_by_user] : folders) {
    // A folder this registry has searched before (one registry serving several
    // pipelines) holds the libraries it already loaded: not duplicates.
    std::error_code ec;
    const fs::path& dir = folder;  // a lambda may not capture a structured binding before C++20 in clang 14
    const auto same_folder = [&](const fs::path& earlier) { return fs::equivalent(earlier, dir, ec); };
    if (std::any_of(searched_.begin(), searched_.end(), same_folder)) {
      spdlog::debug("plugin search: {} was searched already", folder.string());
      continue;
    }
    searched_.push_back(folder);
    if (!fs::is_directory(folder, ec)) {
      if (named_by_user)
        spdlog::warn("plugin folder {} {}; no plugins loaded from it", folder.string(),
                     fs::exists(folder, ec) ? "is not a folder" : "does not exist");
      else
        spdlog::debug("plugin search: {} is not a folder, skipped", folder.string());
      continue;
    }
    std::vector<fs::path> files;
    fs::directory_iterator it(folder, ec), end;
    if (ec) {
      spdlog::warn("plugin folder {} cannot be read: {}", folder.string(), ec.message());
      continue;
    }
    for (; it != end; it.increment(ec)) {
      if (ec) break;
      if (looks_like_plugin_file(it->path())) files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      Status s = add_file(file);
      if (!s.ok()) spdlog::warn("plugin not loaded: {}", s.message());
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

std::string PluginRegistry::why_missing(PluginFamily family, std::string_view name) const {
  if (find(family, name) != nullptr || rejections_.empty()) return "";
  // Files whose name mentions the plugin (libtessera_kvcache_paged.so for
  // "paged") are the likely culprits: list them first, then the others.
  std::vector<const PluginRejection*> ordered;
  for (const auto& r : rejections_)
    if (r.file.filename().string().find(name) != std::string::npos) ordered.push_back(&r);
  const size_t matching = ordered.size();
  for (const auto& r : rejections_)
    if (r.file.filename().string().find(name) == std::string::npos) ordered.push_back(&r);
  constexpr size_t kShown = 4;
  std::string out = matching > 0 ? fmt::format("plugin files that were found but not loaded (the first {} may "
                                               "have provided it):", matching)
                                 : std::string("plugin files that were found but not loaded:");
  for (size_t i = 0; i < ordered.size() && i < kShown; ++i) out += fmt::format("\n  {}", ordered[i]->reason);
  if (ordered.size() > kShown) out += fmt::format("\n  ... and {} more (`tessera plugins` lists them)", ordered.size() - kShown);
  return out;
}

namespace {

// The plugin whose factory this thread is running, for the terminate handler.
thread_local const LoadedPlugin* t_factory_plugin = nullptr;
std::terminate_handler g_previous_terminate = nullptr;

// An exception that leaves a factory compiled noexcept reaches
// std::terminate inside the plugin, before any catch of the core can see it.
// What the core can still do is say which plugin did it and exit cleanly.
[[noreturn]] void terminate_in_factory() {
  if (const LoadedPlugin* p = t_factory_plugin) {
    std::string what = "an unknown exception";
    if (std::exception_ptr e = std::current_exception()) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        what = fmt::format("'{}'", ex.what());
      } catch (...) {
      }
    }
    fmt::print(stderr,
               "error: {} plugin '{}' ({}) threw {} out of its factory, which is declared noexcept, so it "
               "cannot be caught; a factory must report failure through its `error` argument (make_plugin does)\n",
               family_name(p->info->family), p->info->name, p->file.string(), what);
    std::fflush(stderr);
    std::_Exit(1);
  }
  if (g_previous_terminate != nullptr) g_previous_terminate();
  std::abort();
}

void install_factory_terminate_handler() {
  static const bool installed = [] {
    g_previous_terminate = std::set_terminate(&terminate_in_factory);
    return true;
  }();
  (void)installed;
}

}  // namespace

Result<std::shared_ptr<PluginObject>> PluginRegistry::create_object(const LoadedPlugin& plugin,
                                                                  const ParamValues& params) const {
  std::string error;
  PluginObject* raw = nullptr;
  // The factory type is noexcept, but a third-party factory may throw anyway.
  // One compiled without noexcept: calling through a pointer without noexcept
  // keeps the unwind tables that let the catch below turn it into an error.
  // One compiled noexcept: see terminate_in_factory.
  install_factory_terminate_handler();
  PluginObject* (*factory)(const ParamValues&, std::string*) = plugin.info->create;
  t_factory_plugin = &plugin;
  try {
    raw = factory(params, &error);
  } catch (const std::exception& e) {
    error = fmt::format("threw: {}", e.what());
  } catch (...) {
    error = "threw an unknown exception";
  }
  t_factory_plugin = nullptr;
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
