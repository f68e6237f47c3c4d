// architecture_choice.hpp: which architecture plugin serves a model file,
// and what it reads of the file (for `tessera inspect`).
#pragma once

#include <memory>
#include <string_view>

#include <nlohmann/json.hpp>

#include "model/model_file.hpp"
#include "plugin/registry.hpp"
#include "tessera/architecture.hpp"

namespace tessera {

struct FoundArchitecture {
  const LoadedPlugin* plugin = nullptr;
  std::shared_ptr<Architecture> architecture;
};

// The first architecture plugin, in search order, whose supported() lists
// `model_arch` (made with its default parameters). unsupported otherwise,
// listing what each plugin serves.
Result<FoundArchitecture> find_architecture(const PluginRegistry& registry, std::string_view model_arch);

// Adds to inspect_model()'s summary what the architecture plugin reads:
// "arch_plugin" and "hparams" (name -> value), or "hparams_error".
void add_architecture_view(nlohmann::json& info, const ModelFile& file, const PluginRegistry& registry);

}  // namespace tessera
