#include "engine/architecture_choice.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

namespace tessera {

Result<FoundArchitecture> find_architecture(const PluginRegistry& registry, std::string_view model_arch) {
  std::vector<std::string> tried;
  for (const LoadedPlugin* p : registry.plugins(PluginFamily::architecture)) {
    auto params = default_params(*p->info);
    if (!params.ok()) continue;
    auto arch = registry.create<Architecture>(*p, *params);
    if (!arch.ok()) {
      spdlog::warn("{}", arch.status().message());
      continue;
    }
    const auto supported = (*arch)->supported();
    if (std::find(supported.begin(), supported.end(), model_arch) != supported.end())
      return FoundArchitecture{p, std::move(arch).value()};
    tried.push_back(fmt::format("{} ({})", p->info->name, fmt::join(supported, ", ")));
  }
  return Unsupported(fmt::format("no architecture plugin can load this model (architecture '{}'); available: {}",
                                 model_arch,
                                 tried.empty() ? std::string("none found") : fmt::format("{}", fmt::join(tried, "; "))));
}

void add_architecture_view(nlohmann::json& info, const ModelFile& file, const PluginRegistry& registry) {
  auto found = find_architecture(registry, file.architecture());
  if (!found.ok()) {
    info["hparams_error"] = found.status().message();
    return;
  }
  info["arch_plugin"] = found->plugin->info->name;
  std::vector<HyperParameter> hparams;
  const Status s = found->architecture->describe(file, hparams);
  if (!s.ok()) {
    info["hparams_error"] = s.message();
    return;
  }
  nlohmann::json j = nlohmann::json::object();
  for (const HyperParameter& h : hparams)
    std::visit([&](const auto& v) { j[h.name] = v; }, h.value);
  info["hparams"] = j;
}

}  // namespace tessera
