// Plugin entry of the reference attention kernel (family attention, name "reference").
#include "reference_attention.hpp"
#include "tessera/plugin.hpp"

namespace tessera::plugins {
namespace {

constexpr PluginInfo kReferenceInfo{
    PluginFamily::attention,
    "reference",
    "0.1.0",
    "plain causal GQA attention in double precision over any block table; the correctness baseline",
    nullptr,
    0,
    &make_plugin<ReferenceAttention>,
};

}  // namespace

const PluginLibrary* reference_attention_entry() {
  static const PluginLibrary library = plugin_library({&kReferenceInfo, 1});
  return &library;
}

}  // namespace tessera::plugins

TESSERA_PLUGIN_ENTRY(tessera::plugins::reference_attention_entry)
