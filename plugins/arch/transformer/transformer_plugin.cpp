// transformer_plugin.cpp: the library's single entry: the "transformer" architecture.
#include "model_config.hpp"
#include "tessera/architecture.hpp"
#include "tessera/plugin.hpp"
#include "transformer_model.hpp"

namespace tessera::transformer {

class TransformerArchitecture final : public Architecture {
 public:
  explicit TransformerArchitecture(const ParamValues& /*params*/) {}
  std::vector<std::string> supported() const override { return supported_architectures(); }
  Result<std::unique_ptr<Model>> build(ModelBuilder& builder) noexcept override {
    return build_transformer(builder);
  }
};

}  // namespace tessera::transformer

const tessera::PluginLibrary* tessera_transformer_entry() {
  static const tessera::PluginInfo plugins[] = {{
      tessera::PluginFamily::architecture,
      "transformer",
      "0.1.0",
      "Llama-family decoder: llama, mistral, qwen2, smollm (RMSNorm, RoPE, GQA, SwiGLU)",
      nullptr,
      0,
      &tessera::make_plugin<tessera::transformer::TransformerArchitecture>,
  }};
  static const tessera::PluginLibrary library{tessera::kAbiMajor, tessera::kAbiMinor, plugins,
                                              std::size(plugins)};
  return &library;
}
TESSERA_PLUGIN_ENTRY(tessera_transformer_entry)
