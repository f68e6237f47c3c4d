// registry.hpp: finding plugins on the search path and making objects from them.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plugin/plugin_library.hpp"
#include "tessera/architecture.hpp"
#include "tessera/attention.hpp"
#include "tessera/decoding.hpp"
#include "tessera/quantizer.hpp"
#include "tessera/sequence_memory.hpp"

namespace tessera {

// Which interface each family's objects implement.
template <typename T> struct FamilyOf;
template <> struct FamilyOf<Architecture> { static constexpr PluginFamily value = PluginFamily::architecture; };
template <> struct FamilyOf<AttentionKernel> { static constexpr PluginFamily value = PluginFamily::attention; };
template <> struct FamilyOf<SequenceMemory> { static constexpr PluginFamily value = PluginFamily::kvcache; };
template <> struct FamilyOf<Quantizer> { static constexpr PluginFamily value = PluginFamily::quant; };
template <> struct FamilyOf<DecodingStrategy> { static constexpr PluginFamily value = PluginFamily::decoding; };

std::optional<PluginFamily> parse_family(std::string_view name);

// A folder to search for plugins. A folder a user named (a pipeline's
// [plugins] paths, $TESSERA_PLUGIN_PATH, --path) that does not exist is worth
// a warning: probably a typo. The built-in folders may well be absent.
struct PluginFolder {
  PluginFolder(std::filesystem::path p, bool by_user = true) : path(std::move(p)), named_by_user(by_user) {}  // NOLINT
  std::filesystem::path path;
  bool named_by_user = true;
};

// The folders searched, in order: `pipeline_paths` (from the pipeline file),
// each entry of $TESSERA_PLUGIN_PATH (':'-separated), the install prefix's
// plugin folder, <exe>/../lib/tessera/plugins (a relocated prefix or the build
// tree) and <exe>/plugins. Duplicates are dropped, keeping the first.
std::vector<PluginFolder> plugin_search_path(const std::vector<std::filesystem::path>& pipeline_paths);

struct PluginRejection {
  std::filesystem::path file;
  std::string reason;
};

class PluginRegistry {
 public:
  // Loads every plugin library found in `folders`, in order; inside a folder,
  // files in name order. A family+name seen twice keeps the first (a warning
  // names both files). A rejected candidate (not a plugin, another ABI,
  // another C++ library, a broken descriptor) is a warning naming the file
  // and why, and is kept in rejections(). A folder searched before by this
  // registry is skipped; a folder named by a user that does not exist is a warning.
  void scan(const std::vector<PluginFolder>& folders);
  // Loads one library file (tests, explicit paths). Returns why it was refused.
  Status add_file(const std::filesystem::path& file);

  const LoadedPlugin* find(PluginFamily family, std::string_view name) const;
  std::vector<const LoadedPlugin*> plugins() const;
  std::vector<const LoadedPlugin*> plugins(PluginFamily family) const;
  // Names available in a family, sorted, for "valid choices" messages.
  std::vector<std::string> names(PluginFamily family) const;
  // Why `name` of `family` is not available: "" when it is, else the
  // rejected files that might have provided it, each with its reason (those
  // whose file name mentions `name` first), for "unknown plugin" messages.
  std::string why_missing(PluginFamily family, std::string_view name) const;
  const std::vector<PluginRejection>& rejections() const { return rejections_; }
  const std::vector<std::filesystem::path>& searched() const { return searched_; }

  // Makes an object of `plugin`, which must be of T's family, from validated
  // params. The object keeps its library alive. A factory that fails or throws
  // gives an error naming the plugin and its file. A factory compiled
  // noexcept that throws cannot be unwound: the process exits with code 1
  // after an error naming the plugin, its file and the exception.
  template <typename T>
  Result<std::shared_ptr<T>> create(const LoadedPlugin& plugin, const ParamValues& params) const {
    if (plugin.info->family != FamilyOf<T>::value)
      return InvalidArgument(std::string("plugin '") + plugin.info->name + "' is a " +
                             family_name(plugin.info->family) + " plugin, not a " +
                             family_name(FamilyOf<T>::value) + " plugin");
    auto object = create_object(plugin, params);
    if (!object.ok()) return object.status();
    return std::static_pointer_cast<T>(std::move(object).value());
  }

 private:
  Result<std::shared_ptr<PluginObject>> create_object(const LoadedPlugin& plugin, const ParamValues& params) const;
  Status add_loaded(std::vector<LoadedPlugin> plugins);

  std::vector<LoadedPlugin> plugins_;
  std::vector<PluginRejection> rejections_;
  std::vector<std::filesystem::path> searched_;
};

// The parameters of `plugin` with every default filled in (no TOML involved):
// what a plugin gets when its pipeline section gives no keys.
Result<ParamValues> default_params(const PluginInfo& plugin);

}  // namespace tessera
