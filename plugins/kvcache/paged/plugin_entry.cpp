// Plugin entry of the paged KV cache (family kvcache, name "paged").
#include "paged_cache.hpp"
#include "tessera/plugin.hpp"

namespace tessera::plugins {
namespace {

constexpr ParamSpec kPagedParams[] = {
    param_int("block_size", "16", 1, 4096, "tokens per block; sequences grow and share memory a block at a time"),
    param_bytes("memory", "\"512MiB\"", 1, 4.0e18,
                "size of the pool, all layers: K/V blocks (memory / (block_size * KV bytes per token)) and, for "
                "recurrent layers, state slots (half the memory when the model has attention layers too)"),
    param_int("max_sequences", "256", 1, 2147483647.0, "sequences (including forks) held at once"),
    param_string("dtype", "\"f32\"", "f32|f16", "element type of K and V; f16 halves the memory and the bytes attention reads"),
    param_int("checkpoints", "0", 0, 2147483647.0,
              "recurrent models: saved states held at once (rollback of rejected draft tokens); 0 = max_sequences"),
    memory::kPrefixSnapshotsParam,
    memory::kSnapshotIntervalParam,
};

constexpr PluginInfo kPagedInfo{
    PluginFamily::kvcache,
    "paged",
    "0.2.0",
    "fixed-size blocks shared by reference: copy-on-write forks, LRU prefix cache over chained SHA-256 block keys",
    kPagedParams,
    std::size(kPagedParams),
    &make_plugin<PagedKvCache>,
};

}  // namespace

const PluginLibrary* paged_kvcache_entry() {
  static const PluginLibrary library = plugin_library({&kPagedInfo, 1});
  return &library;
}

}  // namespace tessera::plugins

TESSERA_PLUGIN_ENTRY(tessera::plugins::paged_kvcache_entry)
