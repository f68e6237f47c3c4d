// mamba_plugin.cpp: the library's single entry: the "mamba" architecture.
#include <iterator>

#include "mamba_config.hpp"
#include "mamba_model.hpp"
#include "tessera/architecture.hpp"
#include "tessera/plugin.hpp"

namespace tessera::mamba {

const ParamSpec kParams[] = {
    param_bool("chunked_scan", "true",
               "Mamba-2 prompts: whole chunks of 64 positions through the chunked (SSD) form, ~3x the scan's speed; "
               "false: the token-by-token scan everywhere (a token's bits then never depend on where its prompt "
               "was split)"),
};

class MambaArchitecture final : public Architecture {
 public:
  explicit MambaArchitecture(const ParamValues& params) : options_{params.get_bool("chunked_scan")} {}
  std::span<const std::string_view> supported() const noexcept override { return supported_architectures(); }
  Status describe(const WeightStore& weights, std::vector<HyperParameter>& out) const noexcept override {
    return guard([&]() -> Status {
      auto config = read_mamba_config(weights);
      if (!config.ok()) return config.status();
      out = describe_mamba_config(*config);
      return Status::Ok();
    });
  }
  Result<std::unique_ptr<Model>> build(ModelBuilder& builder) noexcept override {
    return build_mamba(builder, options_);
  }

 private:
  MambaOptions options_;
};

}  // namespace tessera::mamba

const tessera::PluginLibrary* tessera_mamba_entry() {
  static const tessera::PluginInfo plugins[] = {{
      tessera::PluginFamily::architecture,
      "mamba",
      "0.2.0",
      "Selective state-space models: Mamba-1 and Mamba-2 (recurrent state, no KV cache), GGUF and Hugging Face",
      tessera::mamba::kParams,
      std::size(tessera::mamba::kParams),
      &tessera::make_plugin<tessera::mamba::MambaArchitecture>,
  }};
  static const tessera::PluginLibrary library = tessera::plugin_library(plugins);
  return &library;
}
TESSERA_PLUGIN_ENTRY(tessera_mamba_entry)
