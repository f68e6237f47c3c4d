// Plugin entry of the paged KV cache (family kvcache, name "paged").
#include "paged_cache.hpp"
#include "tessera/plugin.hpp"

namespace tessera::plugins {
namespace {

constexpr ParamSpec kPagedParams[] = {
    param_int("block_size", "16", 1, 4096, "tokens per block; sequences grow and share memory a block at a time"),
    param_bytes("memory", "\"512MiB\"", 1, 4.0e18,
                "size of the block pool, all layers, K and V; blocks = memory / (block_size * KV bytes per token)"),
    param_int("max_sequences", "256", 1, 2147483647.0, "sequences (including forks) held at once"),
    param_string("dtype", "\"f32\"", "f32|f16", "element type of K and V; f16 halves the memory and the bytes attention reads"),
};

constexpr PluginInfo kPagedInfo{
    PluginFamily::kvcache,
    "paged",
    "0.1.0",
    "fixed-size blocks shared by reference: copy-on-write forks, LRU prefix cache over chained SHA-256 block keys",
    kPagedParams,
    std::size(kPagedParams),
    &make_plugin<PagedKvCache>,
};

}  // namespace

const PluginLibrary* paged_kvcache_entry() {
  static const PluginLibrary library{kAbiMajor, kAbiMinor, &kPagedInfo, 1};
  return &library;
}

}  // namespace tessera::plugins

TESSERA_PLUGIN_ENTRY(tessera::plugins::paged_kvcache_entry)
