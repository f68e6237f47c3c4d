// model_fixture.hpp: open the default model through a real pipeline, or skip.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/session.hpp"
#include "model_required.hpp"
#include "pipeline/pipeline.hpp"
#include "plugin/registry.hpp"
#include "tessera/quantizer.hpp"

namespace tessera::test {

inline const std::filesystem::path kModel =
    std::filesystem::path(TESSERA_SOURCE_DIR) / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf";

inline const std::filesystem::path kPipelines = std::filesystem::path(TESSERA_SOURCE_DIR) / "pipelines";

// A Session on the default model through `pipeline_file`, adjusted by
// `overrides`. Returns nullptr (and the test should GTEST_SKIP) when the model
// is absent.
// The built plugins, and fixtures: one library built for ABI minor 0. Lives
// for the process: plugins are never unloaded.
inline PluginRegistry& test_registry() {
  static PluginRegistry* registry = [] {
    auto* r = new PluginRegistry();
    const std::filesystem::path fixtures(TESSERA_FIXTURE_DIR);
    r->scan({std::filesystem::path(TESSERA_PLUGIN_BUILD_DIR), fixtures / "first", fixtures / "minor0"});
    return r;
  }();
  return *registry;
}

// Every quant plugin of `registry`, made with its default parameters, into
// `out`. Call it as ASSERT_NO_FATAL_FAILURE(make_quantizers(...)): its
// ASSERTs end only this helper.
inline void make_quantizers(PluginRegistry& registry, std::vector<std::shared_ptr<Quantizer>>& out) {
  out.clear();
  for (const LoadedPlugin* p : registry.plugins(PluginFamily::quant)) {
    auto params = default_params(*p->info);
    ASSERT_TRUE(params.ok()) << params.status().message();
    auto q = registry.create<Quantizer>(*p, *params);
    ASSERT_TRUE(q.ok()) << q.status().message();
    out.push_back(*q);
  }
}

// A Session through `pipeline_file` with `overrides` (on 2 threads), whatever
// model the pipeline names; nullptr (with a test failure) on any error.
inline std::unique_ptr<Session> open_session(const std::filesystem::path& pipeline_file,
                                             std::vector<PipelineOverride> overrides) {
  overrides.push_back({"run", "threads", "2"});
  auto pipeline = load_pipeline(pipeline_file, overrides, test_registry());
  EXPECT_TRUE(pipeline.ok()) << pipeline.status().message();
  if (!pipeline.ok()) return nullptr;
  auto session = Session::open(*pipeline, test_registry());
  EXPECT_TRUE(session.ok()) << session.status().message();
  if (!session.ok()) return nullptr;
  return std::move(session).value();
}

// A Session on the default model through `pipeline_file`, adjusted by
// `overrides`. Returns nullptr (and the test should GTEST_SKIP) when the model
// is absent.
inline std::unique_ptr<Session> open_pipeline(const std::filesystem::path& pipeline_file,
                                              std::vector<PipelineOverride> overrides = {},
                                              std::string* skip_reason = nullptr) {
  if (!std::filesystem::exists(kModel)) {
    if (skip_reason) *skip_reason = kModel.string() + " is absent: run scripts/fetch-model.sh";
    return nullptr;
  }
  return open_session(pipeline_file, std::move(overrides));
}

// `var`: a Session through `pipeline_file` with `overrides`, or the test skips
// (model absent; fails instead under TESSERA_REQUIRE_MODEL) or fails
// (pipeline or session error).
#define TESSERA_OPEN_PIPELINE_OR_SKIP(var, pipeline_file, overrides)                \
  std::string var##_skip;                                                           \
  auto var = ::tessera::test::open_pipeline(pipeline_file, overrides, &var##_skip); \
  if (!var##_skip.empty()) TESSERA_MODEL_ABSENT(var##_skip);                        \
  ASSERT_NE(var, nullptr)

// The same through pipelines/quickstart.toml.
#define TESSERA_OPEN_OR_SKIP(var, overrides) \
  TESSERA_OPEN_PIPELINE_OR_SKIP(var, ::tessera::test::kPipelines / "quickstart.toml", overrides)

// A file's whole contents (empty when it cannot be read), to compare files byte for byte.
inline std::string file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline GenerationRequest greedy(const std::string& prompt, int64_t max_tokens, bool chat = true) {
  GenerationRequest r;
  r.prompt = prompt;
  r.max_tokens = max_tokens;
  r.chat = chat;
  r.sampling.temperature = 0;
  return r;
}

}  // namespace tessera::test
