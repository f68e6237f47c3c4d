// mamba_plugin.cpp: the library's single entry: the "mamba" architecture.
#include "mamba_config.hpp"
#include "mamba_model.hpp"
#include "tessera/architecture.hpp"
#include "tessera/plugin.hpp"

namespace tessera::mamba {

class MambaArchitecture final : public Architecture {
 public:
  explicit MambaArchitecture(const ParamValues& /*params*/) {}
  std::span<const std::string_view> supported() const noexcept override { return supported_architectures(); }
  Status describe(const WeightStore& weights, std::vector<HyperParameter>& out) const noexcept override {
    return guard([&]() -> Status {
      auto config = read_mamba_config(weights);
      if (!config.ok()) return config.status();
      out = describe_mamba_config(*config);
      return Status::Ok();
    });
  }
  Result<std::unique_ptr<Model>> build(ModelBuilder& builder) noexcept override { return build_mamba(builder); }
};

}  // namespace tessera::mamba

const tessera::PluginLibrary* tessera_mamba_entry() {
  static const tessera::PluginInfo plugins[] = {{
      tessera::PluginFamily::architecture,
      "mamba",
      "0.1.0",
      "Selective state-space models: Mamba-1 and Mamba-2 (recurrent state, no KV cache), GGUF and Hugging Face",
      nullptr,
      0,
      &tessera::make_plugin<tessera::mamba::MambaArchitecture>,
  }};
  static const tessera::PluginLibrary library = tessera::plugin_library(plugins);
  return &library;
}
TESSERA_PLUGIN_ENTRY(tessera_mamba_entry)
