// Plugin entry of the flash attention kernel (family attention, name "flash").
#include "flash_attention.hpp"
#include "tessera/plugin.hpp"

namespace tessera::plugins {
namespace {

constexpr ParamSpec kFlashParams[] = {
    param_int("tile", "64", 1, 4096, "keys per tile: K/V gathered once per tile for a whole GQA group"),
    param_int("query_rows", "16", 1, 4096, "query rows per parallel work item (times the GQA group size)"),
};

constexpr PluginInfo kFlashInfo{
    PluginFamily::attention,
    "flash",
    "0.1.0",
    "tiled causal GQA attention with online softmax, OpenMP-parallel, any block size",
    kFlashParams,
    std::size(kFlashParams),
    &make_plugin<FlashAttention>,
};

}  // namespace

const PluginLibrary* flash_attention_entry() {
  static const PluginLibrary library = plugin_library({&kFlashInfo, 1});
  return &library;
}

}  // namespace tessera::plugins

TESSERA_PLUGIN_ENTRY(tessera::plugins::flash_attention_entry)
