// Loads a built plugin library the way the core does (Boost.DLL, the single
// `tessera_plugin_entry` alias), so a test sees the real .so: its exports,
// its link dependencies (OpenMP) and its load-time dispatch (ifuncs).
// Link the test with Boost::filesystem and ${CMAKE_DL_LIBS}.
#pragma once

#include <gtest/gtest.h>

#include <boost/dll/shared_library.hpp>
#include <string>

#include "tessera/plugin.hpp"

namespace tessera::test {

struct LoadedLibrary {
  boost::dll::shared_library library;  // keeps the code mapped while `entry` is used
  const PluginLibrary* entry = nullptr;
};

// `file` is a library name in the build tree's plugin folder, e.g. "libtessera_attention_flash.so".
inline LoadedLibrary load_built_plugin(const std::string& file) {
  LoadedLibrary loaded;
  const std::string path = std::string(TESSERA_PLUGIN_BUILD_DIR) + "/" + file;
  boost::system::error_code error;
  loaded.library.load(path, error);
  EXPECT_FALSE(error) << "cannot load " << path << ": " << error.message();
  if (error) return loaded;
  EXPECT_TRUE(loaded.library.has("tessera_plugin_entry")) << path << " does not export tessera_plugin_entry";
  if (!loaded.library.has("tessera_plugin_entry")) return loaded;
  auto entry = loaded.library.get_alias<PluginEntryFn>("tessera_plugin_entry");
  loaded.entry = entry();
  return loaded;
}

}  // namespace tessera::test
