// plugin_library.hpp: opening one plugin library file and checking its ABI.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <boost/dll/shared_library.hpp>

#include "tessera/plugin.hpp"
#include "tessera/status.hpp"

namespace tessera {

// One plugin from a loaded library. `library` keeps the file mapped; every
// object the plugin makes holds a copy of it (see PluginRegistry::create).
struct LoadedPlugin {
  const PluginInfo* info = nullptr;
  std::shared_ptr<boost::dll::shared_library> library;
  std::filesystem::path file;
  uint32_t abi_minor = 0;  // the library's minor: never call anything newer
};

// Opens `file`, reads its entry, checks the ABI major and the descriptor's
// sanity, and returns its plugins. The library is pinned in memory for the
// life of the process (never unloaded: see docs/architecture.md). Errors name
// the file and what is wrong: not a shared library, no entry symbol, another
// ABI major (both versions named), a malformed descriptor.
Result<std::vector<LoadedPlugin>> load_plugin_library(const std::filesystem::path& file);

// True when the name looks like a plugin library (lib*.so on Linux).
bool looks_like_plugin_file(const std::filesystem::path& file);

}  // namespace tessera
