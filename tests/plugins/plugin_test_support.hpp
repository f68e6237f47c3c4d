// Helpers for plugin unit tests: default parameter values from a plugin's
// declared table (what the core would hand the factory for an empty TOML
// table) and checks of the descriptor every plugin entry returns.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <string_view>

#include "tessera/params.hpp"
#include "tessera/plugin.hpp"

namespace tessera::test {

// Parses a ParamSpec default literal the simple way the tests need: integers,
// plain byte counts, reals, booleans and quoted strings. Throws on anything else
// so that a test with an unexpected table fails loudly.
inline ParamValue parse_default(const ParamSpec& spec) {
  const std::string text = spec.default_value;
  switch (spec.type) {
    case ParamType::integer:
    case ParamType::bytes:
      return static_cast<int64_t>(std::stoll(text));
    case ParamType::real:
      return std::stod(text);
    case ParamType::boolean:
      if (text == "true") return true;
      if (text == "false") return false;
      break;
    case ParamType::string:
    case ParamType::path:
      if (text.size() >= 2 && text.front() == '"' && text.back() == '"') return text.substr(1, text.size() - 2);
      break;
    case ParamType::string_list:
      break;
  }
  throw std::invalid_argument(std::string("test support cannot parse default of ") + spec.name + ": " + text);
}

// Every declared parameter with its default (required ones are left out).
inline ParamValues default_params(const PluginInfo& info) {
  ParamValues values;
  for (size_t i = 0; i < info.param_count; ++i) {
    const ParamSpec& spec = info.params[i];
    if (spec.default_value != nullptr) values.set(spec.name, parse_default(spec));
  }
  return values;
}

// The library's descriptor is well formed and holds exactly one plugin of the
// expected family and name; returns it.
inline const PluginInfo& expect_single_plugin(const PluginLibrary* library, PluginFamily family,
                                              std::string_view name) {
  EXPECT_NE(library, nullptr);
  EXPECT_EQ(library->abi_major, kAbiMajor);
  EXPECT_EQ(library->abi_minor, kAbiMinor);
  EXPECT_EQ(library->plugin_count, 1u);
  const PluginInfo& info = library->plugins[0];
  EXPECT_EQ(info.family, family);
  EXPECT_EQ(std::string_view(info.name), name);
  EXPECT_NE(info.version, nullptr);
  EXPECT_GT(std::strlen(info.description), 0u);
  EXPECT_NE(info.create, nullptr);
  for (size_t i = 0; i < info.param_count; ++i) {
    EXPECT_NE(info.params[i].name, nullptr);
    EXPECT_NE(info.params[i].doc, nullptr);
  }
  return info;
}

}  // namespace tessera::test
