#include "pipeline/pipeline.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include "io/read_file.hpp"
#include "params/param_parse.hpp"

namespace tessera {

namespace fs = std::filesystem;

namespace {

constexpr ParamSpec kModelParams[] = {
    param_path("path", nullptr, "model file (.gguf) or Hugging Face safetensors folder; relative to this file"),
    param_string("arch", "\"auto\"", nullptr,
                 "architecture plugin, or \"auto\" to pick the one serving the model's architecture"),
};

constexpr ParamSpec kRunParams[] = {
    param_string("prompt", "\"\"", nullptr, "the prompt (one request)"),
    {"prompts", ParamType::string_list, "[]", 1, 0, nullptr, "several prompts, run as separate requests"},
    param_int("max_tokens", "128", 0, 1e9, "most tokens generated per request"),
    param_bool("chat", "false", "wrap the prompt with the model's chat template"),
    param_string("system", "\"\"", nullptr, "system message for chat (empty: the template's default)"),
    param_int("threads", "0", 0, 4096, "CPU threads (0: one per core)"),
    param_bool("adapt_threads", "true", "use fewer threads while other processes keep the cores busy"),
    param_int("context", "0", 0, 1e9, "context length cap in tokens (0: the model's trained context)"),
    param_bool("stream", "true", "print text to stdout as it is generated"),
};

constexpr ParamSpec kSamplingParams[] = {
    param_real("temperature", "0.8", 0, 100, "softmax temperature; 0 = greedy"),
    param_int("top_k", "40", 0, 1e9, "keep the k most likely tokens (0: off)"),
    param_real("top_p", "0.95", 0, 1, "keep the smallest set with this much probability (1: off)"),
    param_real("min_p", "0.05", 0, 1, "drop tokens below min_p times the top probability (0: off)"),
    param_real("repetition_penalty", "1.0", 0.01, 100, "penalty for recently seen tokens (1: off)"),
    param_int("repeat_last_n", "64", 0, 1e9, "how many recent tokens the penalty looks at"),
    param_int("seed", "-1", -1, 9.2e18, "random seed (-1: a fresh one each run, reported in the metrics)"),
};

constexpr ParamSpec kSpeculativeParams[] = {
    param_string("method", "\"off\"", "off|draft-model|prompt-lookup|both",
                 "where draft tokens come from: a draft model, prompt lookup (n-grams of the text so far), both "
                 "(whichever is expected to yield more), or off"),
    param_path("draft_model", "\"\"",
               "the draft's model file, run with this pipeline's plugins and settings; relative to this file"),
    param_path("draft_pipeline", "\"\"",
               "a pipeline file for the draft (its own model, quant, kvcache and attention); instead of draft_model"),
    param_path("draft_vocabulary", "\"\"",
               "a text file: the draft model's output head computes only the draft_vocabulary_size tokens it uses "
               "most, the control tokens and the request's own tokens, so a drafted token reads less; the output "
               "stays the target's; relative to this file (empty: the whole vocabulary)"),
    param_int("draft_vocabulary_size", "32768", 1, 1e9, "how many tokens the draft's head keeps (draft_vocabulary)"),
    param_int("max_draft_tokens", "8", 1, 16, "most tokens drafted for a request in one step"),
    param_bool("adaptive", "true",
               "choose each request's draft length from measured acceptance and costs, and stop drafting when it "
               "does not pay (false: always max_draft_tokens)"),
    param_real("draft_min_probability", "0.5", 0, 1,
               "a draft model stops drafting when its most likely token is less likely than this"),
    param_int("lookup_min_ngram", "2", 1, 64, "prompt lookup: shortest run of recent tokens to look up"),
    param_int("lookup_max_ngram", "4", 1, 64, "prompt lookup: longest run of recent tokens to look up, tried first"),
};

constexpr ParamSpec kPluginsParams[] = {
    {"paths", ParamType::string_list, "[]", 1, 0, nullptr,
     "extra plugin folders, searched before TESSERA_PLUGIN_PATH; relative to this file"},
};

struct PluginSectionDef {
  const char* name;
  PluginFamily family;
  const char* default_plugin;
};

constexpr PluginSectionDef kPluginSections[] = {
    {"kvcache", PluginFamily::kvcache, "contiguous"},
    {"attention", PluginFamily::attention, "paged"},  // fastest on CPU for decode and prefill (docs/paged-kv.md)
    {"decoding", PluginFamily::decoding, "greedy"},
};

// [quant], when present, names this plugin unless it says otherwise.
constexpr const char* kDefaultQuantPlugin = "ggml";

std::string where(const std::string& source, const toml::source_region& region) {
  if (region.begin.line == 0) return source;
  return fmt::format("{}:{}:{}", source, region.begin.line, region.begin.column);
}

// Validates one table against declared parameters.
class SectionValidator {
 public:
  SectionValidator(const std::string& source, const fs::path& base_dir,
                   const std::vector<PipelineOverride>& overrides)
      : source_(source), base_dir_(base_dir), overrides_(overrides) {}

  // `owner` describes who declares the keys ("kvcache plugin 'paged'").
  Result<ParamValues> validate(const std::string& section, const toml::table* table, const ParamSpec* specs,
                               size_t count, const std::string& owner) const {
    ParamValues values;
    std::map<std::string, bool> seen;
    if (table != nullptr) {
      for (const auto& [key_node, node] : *table) {
        const std::string key(key_node.str());
        if (key == "plugin" && is_plugin_section(section)) continue;
        const ParamSpec* spec = find_spec(specs, count, key);
        if (spec == nullptr) {
          return InvalidArgument(fmt::format("{}: [{}] unknown key '{}' for {}; valid keys: {}",
                                             where(source_, key_node.source()), section, key, owner,
                                             key_list(specs, count)));
        }
        auto v = param_from_toml(*spec, node);
        if (!v.ok())
          return InvalidArgument(fmt::format("{}: [{}] {}", where(source_, node.source()), section,
                                             v.status().message()));
        values.set(key, resolve(*spec, std::move(v).value()));
        seen[key] = true;
      }
    }
    for (const auto& o : overrides_) {
      if (o.section != section || (o.key == "plugin" && is_plugin_section(section))) continue;
      const ParamSpec* spec = find_spec(specs, count, o.key);
      if (spec == nullptr)
        return InvalidArgument(fmt::format("--set {}.{}: unknown key '{}' for {}; valid keys: {}", o.section, o.key,
                                           o.key, owner, key_list(specs, count)));
      Result<ParamValue> v = o.verbatim ? Result<ParamValue>(ParamValue(o.value)) : parse_param_literal(*spec, o.value);
      if (o.verbatim && spec->type != ParamType::string && spec->type != ParamType::path)
        v = parse_param_literal(*spec, o.value);
      if (!v.ok())
        return InvalidArgument(fmt::format("--set {}.{}={}: {}", o.section, o.key, o.value, v.status().message()));
      values.set(o.key, resolve(*spec, std::move(v).value()));
      seen[o.key] = true;
    }
    for (size_t i = 0; i < count; ++i) {
      const ParamSpec& spec = specs[i];
      if (seen.count(spec.name)) continue;
      if (spec.default_value == nullptr) {
        const std::string at = table ? where(source_, table->source()) : source_;
        return InvalidArgument(fmt::format("{}: [{}] missing required key '{}' ({})", at, section, spec.name,
                                           spec.doc ? spec.doc : ""));
      }
      auto v = parse_param_literal(spec, spec.default_value);
      if (!v.ok()) return Internal(fmt::format("{}: bad default for '{}': {}", owner, spec.name, v.status().message()));
      values.set(spec.name, std::move(v).value());
    }
    return values;
  }

  static bool is_plugin_section(const std::string& section) {
    for (const auto& def : kPluginSections) {
      if (section == def.name) return true;
    }
    return section == "arch" || section == "quant";
  }

 private:
  static const ParamSpec* find_spec(const ParamSpec* specs, size_t count, std::string_view key) {
    for (size_t i = 0; i < count; ++i) {
      if (key == specs[i].name) return &specs[i];
    }
    return nullptr;
  }
  static std::string key_list(const ParamSpec* specs, size_t count) {
    if (count == 0) return "(none)";
    std::vector<std::string> names;
    for (size_t i = 0; i < count; ++i) names.emplace_back(specs[i].name);
    return fmt::format("{}", fmt::join(names, ", "));
  }
  // Paths are relative to the pipeline file's folder.
  ParamValue resolve(const ParamSpec& spec, ParamValue v) const {
    auto rel = [&](const std::string& p) { return p.empty() || fs::path(p).is_absolute() ? p : (base_dir_ / p).lexically_normal().string(); };
    if (spec.type == ParamType::path) {
      if (auto* s = std::get_if<std::string>(&v)) return rel(*s);
    }
    return v;
  }

  const std::string& source_;
  const fs::path& base_dir_;
  const std::vector<PipelineOverride>& overrides_;
};

const toml::table* section_table(const toml::table& doc, std::string_view name, const std::string& source,
                                 Status* error) {
  const toml::node* node = doc.get(name);
  if (node == nullptr) return nullptr;
  if (!node->is_table()) {
    *error = InvalidArgument(fmt::format("{}: '{}' must be a table ([{}])", where(source, node->source()), name, name));
    return nullptr;
  }
  return node->as_table();
}

// A --set override's plugin name, read as any string key's value is: a TOML
// string literal (`"paged"`) or plain text (`paged`); verbatim text as it is.
std::string override_plugin_name(const PipelineOverride& o) {
  if (o.verbatim) return o.value;
  static constexpr ParamSpec kPluginName = param_string("plugin", nullptr, nullptr, "a plugin's name");
  Result<ParamValue> name = parse_param_literal(kPluginName, o.value);
  return name.ok() ? std::get<std::string>(*name) : o.value;
}

// The plugin a section names: the `plugin` key, a --set override, or the default.
Result<const LoadedPlugin*> choose_plugin(const std::string& section, PluginFamily family, const char* fallback,
                                          const toml::table* table, const std::string& source,
                                          const std::vector<PipelineOverride>& overrides,
                                          const PluginRegistry& registry) {
  std::string name = fallback;
  std::string at = source;
  if (table != nullptr) {
    if (const toml::node* node = table->get("plugin")) {
      auto s = node->value_exact<std::string>();
      if (!s)
        return InvalidArgument(
            fmt::format("{}: [{}] 'plugin' must be a string naming a {} plugin", where(source, node->source()),
                        section, family_name(family)));
      name = *s;
      at = where(source, node->source());
    }
  }
  for (const auto& o : overrides) {
    if (o.section == section && o.key == "plugin") {
      name = override_plugin_name(o);
      at = fmt::format("--set {}.plugin", section);
    }
  }
  const LoadedPlugin* plugin = registry.find(family, name);
  if (plugin == nullptr) {
    auto names = registry.names(family);
    const std::string why = registry.why_missing(family, name);
    return NotFound(fmt::format("{}: [{}] unknown {} plugin '{}'; available: {}{}", at, section, family_name(family),
                                name, names.empty() ? std::string("(none found: is TESSERA_PLUGIN_PATH set?)")
                                                    : fmt::format("{}", fmt::join(names, ", ")),
                                why.empty() ? "" : "\n" + why));
  }
  return plugin;
}

std::string plugin_owner(const LoadedPlugin& p) {
  return fmt::format("{} plugin '{}'", family_name(p.info->family), p.info->name);
}

// Draft pipelines being read (a draft pipeline may not itself draft with a
// model, which would otherwise recurse).
thread_local int draft_nesting = 0;

}  // namespace

// Whether `path` exists and is not a plain file: a device or a pipe
// (/dev/zero, /dev/stdin) would be read without end.
static bool is_device_or_folder(const fs::path& path) {
  std::error_code ec;
  return fs::exists(path, ec) && !fs::is_regular_file(path, ec);
}

// Sets p.draft from [speculative]: the draft pipeline file, read and checked
// now so that its mistakes are reported with its own file:line:column, or
// this pipeline with the draft's model file.
static Status wire_draft(Pipeline& p, const toml::table& doc, const std::string& source, PluginRegistry& registry) {
  const std::string draft_model = p.speculative.get_string("draft_model");
  const std::string draft_pipeline = p.speculative.get_string("draft_pipeline");
  const toml::node* section = doc.get("speculative");
  const std::string at = section ? where(source, section->source()) : source;
  if (p.speculative.get_int("lookup_min_ngram") > p.speculative.get_int("lookup_max_ngram"))
    return InvalidArgument(fmt::format("{}: [speculative] lookup_min_ngram ({}) is more than lookup_max_ngram ({})",
                                       at, p.speculative.get_int("lookup_min_ngram"),
                                       p.speculative.get_int("lookup_max_ngram")));
  // A draft named while the method drafts with no model (turned off with
  // --set speculative.method=...) is left unused, not an error.
  if (!drafts_with_model(p)) return Status::Ok();
  if (draft_model.empty() == draft_pipeline.empty())
    return InvalidArgument(fmt::format(
        "{}: [speculative] method \"{}\" needs the draft: set draft_model (a model file) or draft_pipeline (a "
        "pipeline file), one of them",
        at, p.speculative.get_string("method")));
  const std::string vocabulary = p.speculative.get_string("draft_vocabulary");
  // A missing text is reported where the draft opens, as a missing model is.
  if (!vocabulary.empty() && is_device_or_folder(vocabulary))
    return InvalidArgument(fmt::format("{}: [speculative] draft_vocabulary {} is not a regular file", at, vocabulary));
  // The draft's head keeps the text's most used tokens (Session::open).
  const auto restrict_head = [&](Pipeline& draft) {
    draft.output_vocabulary_text = vocabulary;
    draft.output_vocabulary_size = p.speculative.get_int("draft_vocabulary_size");
  };
  if (!draft_model.empty()) {
    auto draft = std::make_shared<Pipeline>(p);
    draft->model.set("path", draft_model);
    draft->speculative.set("method", std::string("off"));
    draft->speculative.set("draft_model", std::string());
    draft->speculative.set("draft_vocabulary", std::string());
    restrict_head(*draft);
    p.draft = std::move(draft);
    return Status::Ok();
  }
  if (draft_nesting > 0)
    return InvalidArgument(fmt::format("{}: [speculative] a draft pipeline cannot itself draft with a model", at));
  if (is_device_or_folder(draft_pipeline))
    return InvalidArgument(
        fmt::format("{}: [speculative] draft_pipeline {} is not a regular file", at, draft_pipeline));
  ++draft_nesting;
  auto draft = load_pipeline(draft_pipeline, {}, registry);
  --draft_nesting;
  if (!draft.ok())
    return Status(draft.status().code(),
                  fmt::format("{}: [speculative] draft_pipeline: {}", at, draft.status().message()));
  if (drafts_with_lookup(*draft) || drafts_with_model(*draft))
    return InvalidArgument(fmt::format("{}: [speculative] the draft pipeline {} has speculative decoding on; a draft "
                                       "runs alone (set its method to \"off\")",
                                       at, draft_pipeline));
  restrict_head(*draft);
  p.draft = std::make_shared<Pipeline>(std::move(draft).value());
  return Status::Ok();
}

Result<PipelineOverride> parse_override(std::string_view text) {
  const auto eq = text.find('=');
  const auto dot = text.find('.');
  if (eq == std::string_view::npos || dot == std::string_view::npos || dot > eq || dot == 0 || dot + 1 == eq)
    return InvalidArgument(fmt::format("--set '{}': expected section.key=value (for example kvcache.block_size=16)",
                                       text));
  return PipelineOverride{std::string(text.substr(0, dot)), std::string(text.substr(dot + 1, eq - dot - 1)),
                          std::string(text.substr(eq + 1)), false};
}

std::vector<CoreSection> core_sections() {
  return {
      {"model", kModelParams, std::size(kModelParams), "the model file and its architecture"},
      {"run", kRunParams, std::size(kRunParams), "what to generate"},
      {"sampling", kSamplingParams, std::size(kSamplingParams), "shared sampling settings (used by sampling decoders)"},
      {"speculative", kSpeculativeParams, std::size(kSpeculativeParams),
       "speculative decoding: draft tokens verified by the model in one step (docs/speculative.md)"},
      {"plugins", kPluginsParams, std::size(kPluginsParams), "where to look for plugins"},
  };
}

bool drafts_with_model(const Pipeline& p) {
  const std::string method = p.speculative.get_string("method");
  return method == "draft-model" || method == "both";
}

bool drafts_with_lookup(const Pipeline& p) {
  const std::string method = p.speculative.get_string("method");
  return method == "prompt-lookup" || method == "both";
}

Result<Pipeline> parse_pipeline(std::string_view toml_text, const std::string& source_name, const fs::path& base_dir,
                                const std::vector<PipelineOverride>& overrides, PluginRegistry& registry,
                                bool scan_plugins) {
  toml::table doc;
  try {
    doc = toml::parse(toml_text, source_name);
  } catch (const toml::parse_error& e) {
    return InvalidArgument(fmt::format("{}: TOML syntax error: {}", where(source_name, e.source()), e.description()));
  }

  // Every top-level key must be a known section.
  std::vector<std::string> known = {"model",     "run",      "sampling", "speculative", "plugins", "kvcache",
                                    "attention", "decoding", "arch",     "quant"};
  for (const auto& [key, node] : doc) {
    if (std::find(known.begin(), known.end(), std::string(key.str())) == known.end())
      return InvalidArgument(fmt::format("{}: unknown section '{}'; valid sections: {}", where(source_name, key.source()),
                                         key.str(), fmt::join(known, ", ")));
  }
  for (const auto& o : overrides) {
    if (std::find(known.begin(), known.end(), o.section) == known.end())
      return InvalidArgument(fmt::format("--set {}.{}: unknown section '{}'; valid sections: {}", o.section, o.key,
                                         o.section, fmt::join(known, ", ")));
  }

  Status error;
  SectionValidator validator(source_name, base_dir, overrides);
  Pipeline p;
  p.file = base_dir / fs::path(source_name).filename();

  auto core_section = [&](const char* name, const ParamSpec* specs, size_t n) -> Result<ParamValues> {
    const toml::table* t = section_table(doc, name, source_name, &error);
    if (!error.ok()) return error;
    return validator.validate(name, t, specs, n, fmt::format("section [{}]", name));
  };

  auto plugins = core_section("plugins", kPluginsParams, std::size(kPluginsParams));
  if (!plugins.ok()) return plugins.status();
  for (const auto& path : plugins->get_list("paths")) {
    fs::path pp(path);
    p.plugin_paths.push_back(pp.is_absolute() ? pp : (base_dir / pp).lexically_normal());
  }
  if (scan_plugins) registry.scan(plugin_search_path(p.plugin_paths));

  auto model = core_section("model", kModelParams, std::size(kModelParams));
  if (!model.ok()) return model.status();
  p.model = std::move(model).value();
  auto run = core_section("run", kRunParams, std::size(kRunParams));
  if (!run.ok()) return run.status();
  p.run = std::move(run).value();
  auto sampling = core_section("sampling", kSamplingParams, std::size(kSamplingParams));
  if (!sampling.ok()) return sampling.status();
  p.sampling = std::move(sampling).value();

  auto plugin_section = [&](const std::string& name, PluginFamily family, const char* fallback,
                            PluginSelection* out) -> Status {
    const toml::table* t = section_table(doc, name, source_name, &error);
    if (!error.ok()) return error;
    auto chosen = choose_plugin(name, family, fallback, t, source_name, overrides, registry);
    if (!chosen.ok()) return chosen.status();
    const LoadedPlugin* plugin = chosen.value();
    auto values = validator.validate(name, t, plugin->info->params, plugin->info->param_count, plugin_owner(*plugin));
    if (!values.ok()) return values.status();
    out->plugin = plugin;
    out->params = std::move(values).value();
    return Status::Ok();
  };

  for (const auto& def : kPluginSections) {
    PluginSelection* target = def.family == PluginFamily::kvcache     ? &p.kvcache
                              : def.family == PluginFamily::attention ? &p.attention
                                                                      : &p.decoding;
    TESSERA_RETURN_IF_ERROR(plugin_section(def.name, def.family, def.default_plugin, target));
  }

  const std::string arch = p.model.get_string("arch");
  if (arch != "auto") {
    PluginSelection selection;
    TESSERA_RETURN_IF_ERROR(plugin_section("arch", PluginFamily::architecture, arch.c_str(), &selection));
    p.arch = std::move(selection);
  } else if (doc.get("arch") != nullptr) {
    return InvalidArgument(fmt::format("{}: [arch] is only valid when [model] arch names a plugin (it is \"auto\")",
                                       where(source_name, doc.get("arch")->source())));
  }

  // [quant] is optional: without it every quant plugin runs with its defaults.
  const bool quant_named = doc.get("quant") != nullptr ||
                           std::any_of(overrides.begin(), overrides.end(),
                                       [](const PipelineOverride& o) { return o.section == "quant"; });
  if (quant_named) {
    PluginSelection selection;
    TESSERA_RETURN_IF_ERROR(plugin_section("quant", PluginFamily::quant, kDefaultQuantPlugin, &selection));
    p.quant = std::move(selection);
  }

  auto speculative = core_section("speculative", kSpeculativeParams, std::size(kSpeculativeParams));
  if (!speculative.ok()) return speculative.status();
  p.speculative = std::move(speculative).value();
  TESSERA_RETURN_IF_ERROR(wire_draft(p, doc, source_name, registry));
  return p;
}

Result<Pipeline> load_pipeline(const fs::path& file, const std::vector<PipelineOverride>& overrides,
                               PluginRegistry& registry) {
  auto text = read_file(file, "pipeline file");
  if (!text.ok()) return text.status();
  std::error_code ec;
  const fs::path absolute = fs::absolute(file, ec);
  auto p = parse_pipeline(*text, file.string(), absolute.parent_path(), overrides, registry, true);
  if (p.ok()) p->file = absolute;
  return p;
}

}  // namespace tessera
