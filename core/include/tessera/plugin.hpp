// tessera/plugin.hpp: the plugin ABI: version, descriptor, export macro.
//
// A plugin library exports exactly one symbol, `tessera_plugin_entry`, through
// TESSERA_PLUGIN_ENTRY (Boost.DLL alias). It returns a PluginLibrary that lists
// every plugin in the library; registration is explicit, never done by static
// initializers. The core reads abi_major/abi_minor first and refuses a library
// whose major differs, whose minor is newer than its own (the library may call
// what this core lacks) or that was built with another C++ standard library
// (see abi.hpp). It never calls a method newer than an object's library offers.
//
// Rules every plugin follows:
//  * No exception crosses the boundary: factories are noexcept and report
//    failure through `error`; interface calls return Status/Result.
//  * Objects handed to the core are deleted through their virtual destructor;
//    the core keeps the library loaded for as long as any object it made lives.
//  * Build with -fvisibility=hidden (tessera_add_plugin does): only the entry
//    is exported.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <span>

#include "tessera/abi.hpp"
#include "tessera/params.hpp"

namespace tessera {

// Values are stable ABI: append only.
enum class PluginFamily : uint32_t {
  architecture = 0,  // -> tessera::Architecture   (architecture.hpp)
  attention = 1,     // -> tessera::AttentionKernel (attention.hpp)
  kvcache = 2,       // -> tessera::KvCache         (kv_cache.hpp)
  quant = 3,         // -> tessera::Quantizer       (quantizer.hpp)
  decoding = 4,      // -> tessera::DecodingStrategy (decoding.hpp)
};

constexpr const char* family_name(PluginFamily f) {
  switch (f) {
    case PluginFamily::architecture: return "arch";
    case PluginFamily::attention: return "attention";
    case PluginFamily::kvcache: return "kvcache";
    case PluginFamily::quant: return "quant";
    case PluginFamily::decoding: return "decoding";
  }
  return "unknown";
}

// Makes one plugin object from validated parameters. Returns nullptr and sets
// *error on failure. Must not throw: an exception thrown through a noexcept
// factory cannot be unwound, so the core can only name the plugin and exit.
using PluginFactory = PluginObject* (*)(const ParamValues& params, std::string* error) noexcept;

// One plugin. Layout frozen within an ABI major (see static_asserts below).
struct PluginInfo {
  PluginFamily family;
  const char* name;         // unique within its family, e.g. "paged"
  const char* version;      // the plugin's own version, e.g. "0.1.0"
  const char* description;  // one line
  const ParamSpec* params;  // declared parameters
  size_t param_count;
  PluginFactory create;
};

// What the entry returns. Layout frozen within an ABI major: abi_major must stay first, forever.
struct PluginLibrary {
  uint32_t abi_major;          // TESSERA_ABI_MAJOR the library was built against
  uint32_t abi_minor;          // TESSERA_ABI_MINOR the library was built against
  const char* cxx_runtime;     // TESSERA_CXX_RUNTIME: the C++ standard library it was built with
  const PluginInfo* plugins;
  size_t plugin_count;
};

static_assert(offsetof(PluginLibrary, abi_major) == 0);
static_assert(offsetof(PluginLibrary, abi_minor) == 4);
static_assert(offsetof(PluginLibrary, cxx_runtime) == 8);
static_assert(offsetof(PluginLibrary, plugins) == 16);
static_assert(offsetof(PluginLibrary, plugin_count) == 24);
static_assert(sizeof(PluginLibrary) == 32);
static_assert(offsetof(PluginInfo, family) == 0);
static_assert(offsetof(PluginInfo, name) == 8);
static_assert(offsetof(PluginInfo, params) == 32);
static_assert(offsetof(PluginInfo, create) == 48);
static_assert(sizeof(PluginInfo) == 56);
static_assert(offsetof(ParamSpec, type) == 8);
static_assert(offsetof(ParamSpec, min_value) == 24);
static_assert(offsetof(ParamSpec, doc) == 48);
static_assert(sizeof(ParamSpec) == 56);

// The descriptor of a library built with this SDK, for its entry:
//   static const PluginLibrary library = plugin_library(kPlugins);
constexpr PluginLibrary plugin_library(std::span<const PluginInfo> plugins) {
  return {kAbiMajor, kAbiMinor, TESSERA_CXX_RUNTIME, plugins.data(), plugins.size()};
}

using PluginEntryFn = const PluginLibrary*();

// Helper for the common factory: construct T(params) and catch everything.
template <typename T>
PluginObject* make_plugin(const ParamValues& params, std::string* error) noexcept {
  // Filling in *error may itself run out of memory: that is swallowed too.
  auto set_error = [error](const char* what) noexcept {
    try {
      if (error) *error = what;
    } catch (...) {
    }
  };
  try {
    return new T(params);
  } catch (const std::exception& e) {
    set_error(e.what());
  } catch (...) {
    set_error("unknown exception");
  }
  return nullptr;
}

}  // namespace tessera

// Export the library's single entry. Usage, in exactly one .cpp of a plugin:
//   const tessera::PluginLibrary* my_entry() {
//     static const tessera::PluginLibrary library = tessera::plugin_library(kPlugins);
//     return &library;
//   }
//   TESSERA_PLUGIN_ENTRY(my_entry)
// Boost.DLL's alias header is the only Boost header the SDK includes.
#include <boost/dll/alias.hpp>
#define TESSERA_PLUGIN_ENTRY(fn) BOOST_DLL_ALIAS(fn, tessera_plugin_entry)
