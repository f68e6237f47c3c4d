// Plugin entry of the sampling decoding strategy (family decoding, name "sampling").
#include "sampling_strategy.hpp"
#include "tessera/plugin.hpp"

namespace tessera::plugins {
namespace {

constexpr PluginInfo kSamplingInfo{
    PluginFamily::decoding,
    "sampling",
    "0.1.0",
    "draws from the logits shaped by [sampling]: repetition penalty, temperature, top-k, top-p, min-p",
    nullptr,
    0,
    &make_plugin<SamplingStrategy>,
};

}  // namespace

const PluginLibrary* sampling_decoding_entry() {
  static const PluginLibrary library = plugin_library({&kSamplingInfo, 1});
  return &library;
}

}  // namespace tessera::plugins

TESSERA_PLUGIN_ENTRY(tessera::plugins::sampling_decoding_entry)
