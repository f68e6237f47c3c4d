// transformer_plugin.cpp: the library's single entry: the "transformer" architecture.
#include "gguf_layout.hpp"
#include "llama_hparams.hpp"
#include "model_config.hpp"
#include "tessera/architecture.hpp"
#include "tessera/plugin.hpp"
#include "transformer_model.hpp"

namespace tessera::transformer {

class TransformerArchitecture final : public Architecture {
 public:
  explicit TransformerArchitecture(const ParamValues& /*params*/) {}
  std::span<const std::string_view> supported() const noexcept override { return supported_architectures(); }
  Status describe(const WeightStore& weights, std::vector<HyperParameter>& out) const noexcept override {
    return guard([&]() -> Status {
      auto config = resolve_config(weights);
      if (!config.ok()) return config.status();
      out = describe_llama_hparams(config->hparams);
      return Status::Ok();
    });
  }
  Result<std::unique_ptr<Model>> build(ModelBuilder& builder) noexcept override { return build_transformer(builder); }
  Status gguf_layout(const WeightStore& weights, GgufLayout& out) const noexcept override {
    return guard([&]() -> Status {
      auto layout = gguf_layout_of(weights);
      if (!layout.ok()) return layout.status();
      out = std::move(layout).value();
      return Status::Ok();
    });
  }
};

}  // namespace tessera::transformer

const tessera::PluginLibrary* tessera_transformer_entry() {
  static const tessera::PluginInfo plugins[] = {{
      tessera::PluginFamily::architecture,
      "transformer",
      "0.2.0",
      "Llama-family decoder: llama, mistral, qwen2, smollm (RMSNorm, RoPE, GQA, SwiGLU), GGUF and Hugging Face",
      nullptr,
      0,
      &tessera::make_plugin<tessera::transformer::TransformerArchitecture>,
  }};
  static const tessera::PluginLibrary library = tessera::plugin_library(plugins);
  return &library;
}
TESSERA_PLUGIN_ENTRY(tessera_transformer_entry)
