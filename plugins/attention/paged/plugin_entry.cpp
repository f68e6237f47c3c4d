// Plugin entry of the paged attention kernel (family attention, name "paged").
#include "paged_attention.hpp"
#include "tessera/plugin.hpp"

namespace tessera::plugins {
namespace {

constexpr ParamSpec kPagedParams[] = {
    param_int("query_rows", "16", 1, 4096, "query rows per task (times the GQA group size in query vectors)"),
    param_int("splits", "0", 0, 256,
              "parts each task's key range is cut into and merged (split-K); 0 = automatic, for long decodes"),
};

constexpr PluginInfo kPagedInfo{
    PluginFamily::attention,
    "paged",
    "0.1.0",
    "causal GQA attention walking block tables block by block, online softmax, split-K for long decodes",
    kPagedParams,
    std::size(kPagedParams),
    &make_plugin<PagedAttention>,
};

}  // namespace

const PluginLibrary* paged_attention_entry() {
  static const PluginLibrary library = plugin_library({&kPagedInfo, 1});
  return &library;
}

}  // namespace tessera::plugins

TESSERA_PLUGIN_ENTRY(tessera::plugins::paged_attention_entry)
