// Fuzzes the pipeline reader: TOML text, plus an optional `--set` override in
// the input's first line, validated against declaration-only fixture plugins
// (a kvcache, an attention, a decoding and a quant plugin with every parameter
// type). No crash, no hang; a refusal always says why; an accepted pipeline
// has every plugin section wired, its draft's too when [speculative] drafts
// with a model.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <vector>

#include "pipeline/pipeline.hpp"

namespace {

tessera::PluginRegistry& fixture_registry() {
  static tessera::PluginRegistry* registry = [] {
    auto* r = new tessera::PluginRegistry();  // lives for the process
    r->scan({std::filesystem::path(TESSERA_FUZZ_PLUGIN_DIR)});
    if (r->plugins().size() < 4) {
      std::fprintf(stderr, "fuzz_pipeline: fixture plugins missing from %s\n", TESSERA_FUZZ_PLUGIN_DIR);
      std::abort();
    }
    return r;
  }();
  return *registry;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<PipelineOverride> overrides;
  // "--set section.key=value" on the first line: the rest is the file.
  if (text.starts_with("--set ")) {
    const size_t eol = text.find('\n');
    const std::string_view line = text.substr(6, eol == std::string_view::npos ? std::string_view::npos : eol - 6);
    auto o = parse_override(line);
    if (o.ok()) overrides.push_back(std::move(o).value());
    else if (o.status().message().empty()) std::abort();
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
  }
  auto p = parse_pipeline(text, "fuzz.toml", "/fuzz", overrides, fixture_registry());
  if (!p.ok()) {
    if (p.status().message().empty()) {
      std::fprintf(stderr, "fuzz_pipeline: a refusal without a message\n");
      std::abort();
    }
    return 0;
  }
  if (p->kvcache.plugin == nullptr || p->attention.plugin == nullptr || p->decoding.plugin == nullptr ||
      (p->quant && p->quant->plugin == nullptr) || (p->arch && p->arch->plugin == nullptr)) {
    std::fprintf(stderr, "fuzz_pipeline: an accepted pipeline with a section unwired\n");
    std::abort();
  }
  // [speculative] drafting with a model: the draft's pipeline is wired too
  // and does not speculate itself.
  if (drafts_with_model(*p) != (p->draft != nullptr) ||
      (p->draft && (p->draft->kvcache.plugin == nullptr || drafts_with_model(*p->draft)))) {
    std::fprintf(stderr, "fuzz_pipeline: [speculative] accepted without a wired draft pipeline\n");
    std::abort();
  }
  return 0;
}
