// pipeline.hpp: a TOML pipeline file -> a validated, wired Pipeline.
//
// Every section and key is checked against a declaration: the core declares
// [model], [run], [sampling] and [plugins]; the plugin named in [kvcache],
// [attention], [decoding] (and [arch], when [model] arch names one; [quant],
// when present) declares
// the rest of its section. Errors name file:line:column and the key, and list
// the valid choices. docs/pipelines.md documents every key.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "plugin/registry.hpp"
#include "tessera/params.hpp"
#include "tessera/status.hpp"

namespace tessera {

// `--set section.key=value`; `verbatim` values are taken as strings as they are
// (the CLI's --prompt), the others are TOML literals ("16", "0.7", "true").
struct PipelineOverride {
  std::string section;
  std::string key;
  std::string value;
  bool verbatim = false;
};

// Parses "section.key=value". Errors say what the form must be.
Result<PipelineOverride> parse_override(std::string_view text);

struct PluginSelection {
  const LoadedPlugin* plugin = nullptr;
  ParamValues params;
};

struct Pipeline {
  std::filesystem::path file;          // the pipeline file (absolute)
  ParamValues model;                   // [model]: path (resolved), arch
  ParamValues run;                     // [run]
  ParamValues sampling;                // [sampling]
  ParamValues speculative;             // [speculative]
  std::vector<std::filesystem::path> plugin_paths;  // [plugins] paths (resolved)
  PluginSelection kvcache;
  PluginSelection attention;
  PluginSelection decoding;
  std::optional<PluginSelection> arch; // set when [model] arch names a plugin (not "auto")
  // Set when the file has [quant] (or --set quant.KEY): that quant plugin,
  // with its parameters, runs the formats it declares before any other.
  std::optional<PluginSelection> quant;
  // The draft model's pipeline when [speculative] drafts with a model: the
  // file draft_pipeline names, or this pipeline with [model] path replaced
  // by draft_model. Its own [speculative] is off.
  std::shared_ptr<const Pipeline> draft;
  // Set on a draft's pipeline from the target's [speculative]
  // draft_vocabulary: the text whose output_vocabulary_size most used tokens
  // are the only ones the model's head computes (empty: all of them).
  std::filesystem::path output_vocabulary_text;
  int64_t output_vocabulary_size = 0;
};

// Whether [speculative] drafts with a model, with prompt lookup.
bool drafts_with_model(const Pipeline& pipeline);
bool drafts_with_lookup(const Pipeline& pipeline);

// The core's own sections' declarations (for docs and `tessera plugins --describe`).
struct CoreSection {
  const char* name;
  const ParamSpec* params;
  size_t count;
  const char* doc;
};
std::vector<CoreSection> core_sections();

// Reads `file`, scans plugins into `registry` (the pipeline's [plugins] paths
// first, then the standard search path), and validates everything. Errors are
// invalid_argument (a configuration mistake: exit code 2) or not_found.
Result<Pipeline> load_pipeline(const std::filesystem::path& file, const std::vector<PipelineOverride>& overrides,
                               PluginRegistry& registry);

// The same from TOML text; `source_name` is used in messages and relative paths
// resolve against `base_dir`. Scans nothing: `registry` must be filled already.
Result<Pipeline> parse_pipeline(std::string_view toml_text, const std::string& source_name,
                                const std::filesystem::path& base_dir,
                                const std::vector<PipelineOverride>& overrides, PluginRegistry& registry,
                                bool scan_plugins = false);

}  // namespace tessera
