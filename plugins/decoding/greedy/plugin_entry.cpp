// Plugin entry of the greedy decoding strategy (family decoding, name "greedy").
#include "greedy_strategy.hpp"
#include "tessera/plugin.hpp"

namespace tessera::plugins {
namespace {

constexpr PluginInfo kGreedyInfo{
    PluginFamily::decoding,
    "greedy",
    "0.1.0",
    "argmax of the logits, ties to the lowest token id; ignores [sampling]",
    nullptr,
    0,
    &make_plugin<GreedyStrategy>,
};

}  // namespace

const PluginLibrary* greedy_decoding_entry() {
  static const PluginLibrary library = plugin_library({&kGreedyInfo, 1});
  return &library;
}

}  // namespace tessera::plugins

TESSERA_PLUGIN_ENTRY(tessera::plugins::greedy_decoding_entry)
