#include "plugin/plugin_library.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

#include <boost/dll/import.hpp>

#include "params/param_parse.hpp"

namespace tessera {
namespace {

constexpr const char* kEntrySymbol = "tessera_plugin_entry";

// Checks what the core relies on before it ever calls into a plugin.
Status check_descriptor(const PluginInfo& p, const std::filesystem::path& file, size_t index) {
  const auto where = fmt::format("{}: plugin #{}", file.string(), index);
  if (p.name == nullptr || *p.name == '\0') return CorruptData(where + " has no name");
  if (static_cast<uint32_t>(p.family) > static_cast<uint32_t>(PluginFamily::decoding))
    return CorruptData(fmt::format("{} ('{}') has unknown family {}", where, p.name,
                                   static_cast<uint32_t>(p.family)));
  if (p.create == nullptr) return CorruptData(fmt::format("{} ('{}') has no factory", where, p.name));
  if (p.param_count > 0 && p.params == nullptr)
    return CorruptData(fmt::format("{} ('{}') declares {} parameters but no table", where, p.name, p.param_count));
  if (p.param_count > 1024)
    return CorruptData(fmt::format("{} ('{}') declares an absurd {} parameters", where, p.name, p.param_count));
  for (size_t i = 0; i < p.param_count; ++i) {
    const ParamSpec& s = p.params[i];
    if (s.name == nullptr || *s.name == '\0')
      return CorruptData(fmt::format("{} ('{}') parameter #{} has no name", where, p.name, i));
    if (static_cast<uint32_t>(s.type) > static_cast<uint32_t>(ParamType::string_list))
      return CorruptData(fmt::format("{} ('{}') parameter '{}' has unknown type", where, p.name, s.name));
    if (s.default_value != nullptr) {
      auto v = parse_param_literal(s, s.default_value);
      if (!v.ok())
        return CorruptData(fmt::format("{} ('{}') parameter '{}' has a bad default: {}", where, p.name, s.name,
                                       v.status().message()));
    }
  }
  return Status::Ok();
}

}  // namespace

bool looks_like_plugin_file(const std::filesystem::path& file) {
  const auto name = file.filename().string();
  return file.extension() == ".so" && name.rfind("lib", 0) == 0;
}

Result<std::vector<LoadedPlugin>> load_plugin_library(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    return NotFound(fmt::format("{}: not a regular file", file.string()));

  auto library = std::make_shared<boost::dll::shared_library>();
  boost::system::error_code load_error;
  // rtld_now: unresolved symbols are an error now, not a crash later.
  library->load(file.string(), load_error, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  if (load_error) {
    const char* why = dlerror();
    return InvalidArgument(fmt::format("{}: cannot be loaded as a shared library: {}", file.string(),
                                       why ? why : load_error.message()));
  }
  if (!library->has(kEntrySymbol))
    return InvalidArgument(fmt::format("{}: is not a Tessera plugin: it has no '{}' entry symbol "
                                       "(export one with TESSERA_PLUGIN_ENTRY)",
                                       file.string(), kEntrySymbol));

  const PluginLibrary* descriptor = nullptr;
  try {
    auto& entry = library->get_alias<PluginEntryFn>(kEntrySymbol);
    descriptor = entry();
  } catch (const std::exception& e) {
    return Internal(fmt::format("{}: its entry failed: {}", file.string(), e.what()));
  } catch (...) {
    return Internal(fmt::format("{}: its entry threw an unknown exception", file.string()));
  }
  if (descriptor == nullptr) return CorruptData(fmt::format("{}: its entry returned no descriptor", file.string()));
  if (descriptor->abi_major != kAbiMajor)
    return InvalidArgument(fmt::format(
        "{}: built for Tessera plugin ABI {}.{}, but this Tessera speaks ABI {}.{}; rebuild the plugin "
        "against this SDK",
        file.string(), descriptor->abi_major, descriptor->abi_minor, kAbiMajor, kAbiMinor));
  if (descriptor->abi_minor > kAbiMinor)
    return InvalidArgument(fmt::format(
        "{}: built for Tessera plugin ABI {}.{}, newer than this Tessera's ABI {}.{}: it may call what this "
        "Tessera lacks; update Tessera or rebuild the plugin against this SDK",
        file.string(), descriptor->abi_major, descriptor->abi_minor, kAbiMajor, kAbiMinor));
  // C++ objects cross the boundary: both sides must lay them out alike.
  const std::string_view runtime = descriptor->cxx_runtime != nullptr ? descriptor->cxx_runtime : "";
  if (runtime != TESSERA_CXX_RUNTIME)
    return InvalidArgument(fmt::format(
        "{}: built with the C++ standard library {}, but this Tessera was built with {}: their std::string and "
        "std::vector differ, so it cannot be loaded; rebuild the plugin with the same standard library",
        file.string(), runtime.empty() ? std::string("(not recorded)") : fmt::format("'{}'", runtime),
        fmt::format("'{}'", TESSERA_CXX_RUNTIME)));
  if (descriptor->plugin_count == 0 || descriptor->plugins == nullptr)
    return CorruptData(fmt::format("{}: its descriptor lists no plugins", file.string()));
  if (descriptor->plugin_count > 256)
    return CorruptData(fmt::format("{}: its descriptor lists an absurd {} plugins", file.string(),
                                   descriptor->plugin_count));

  std::vector<LoadedPlugin> plugins;
  for (size_t i = 0; i < descriptor->plugin_count; ++i) {
    TESSERA_RETURN_IF_ERROR(check_descriptor(descriptor->plugins[i], file, i));
    plugins.push_back({&descriptor->plugins[i], library, file, descriptor->abi_minor});
  }
  // Pin the library: it is never unloaded during the process, so no object,
  // thread or function pointer it made can outlive its code (ARCHITECTURE.md §7).
  dlopen(file.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  return plugins;
}

}  // namespace tessera
