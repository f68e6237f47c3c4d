// Plugin entry of the contiguous KV cache (family kvcache, name "contiguous").
#include "contiguous_cache.hpp"
#include "tessera/plugin.hpp"

namespace tessera::plugins {
namespace {

constexpr ParamSpec kContiguousParams[] = {
    param_int("max_sequences", "1", 1, 2147483647.0,
              "sequences held at once; each reserves a whole max_context block up front"),
    param_int("max_context", "0", 0, 2147483647.0,
              "tokens per sequence; 0 = the model's max_context (must not exceed it)"),
    param_bytes("memory", "0", 0, 4.0e18,
                "cap on the KV pools (max_sequences * max_context * KV bytes per token); 0 = no cap"),
    param_string("dtype", "\"f32\"", "f32|f16", "element type of K and V; f16 halves the memory and the bytes attention reads"),
    param_int("checkpoints", "0", 0, 2147483647.0,
              "recurrent models: saved states held at once (rollback of rejected draft tokens); 0 = max_sequences"),
    memory::kPrefixSnapshotsParam,
    memory::kSnapshotIntervalParam,
};

constexpr PluginInfo kContiguousInfo{
    PluginFamily::kvcache,
    "contiguous",
    "0.2.0",
    "one block of max_context tokens per sequence, reserved up front; recurrent states; fork copies",
    kContiguousParams,
    std::size(kContiguousParams),
    &make_plugin<ContiguousKvCache>,
};

}  // namespace

const PluginLibrary* contiguous_kvcache_entry() {
  static const PluginLibrary library = plugin_library({&kContiguousInfo, 1});
  return &library;
}

}  // namespace tessera::plugins

TESSERA_PLUGIN_ENTRY(tessera::plugins::contiguous_kvcache_entry)
