// Loading real plugin libraries: the good, the wrong ABI, the not-a-plugin,
// the not-a-library, the factory that throws, and the search order.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "plugin/registry.hpp"
#include "support/scratch_dir.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
const fs::path kFixtures = TESSERA_FIXTURE_DIR;

TEST(PluginLoader, LoadsARealPluginLibrary) {
  auto plugins = load_plugin_library(kFixtures / "first" / "libfixture_good.so");
  ASSERT_TRUE(plugins.ok()) << plugins.status().message();
  ASSERT_EQ(plugins->size(), 1u);
  const auto& p = plugins->front();
  EXPECT_STREQ(p.info->name, "fixture_fixed");
  EXPECT_EQ(p.info->family, PluginFamily::decoding);
  EXPECT_STREQ(p.info->version, "1.0");
  EXPECT_EQ(p.info->param_count, 7u);
}

TEST(PluginLoader, CreatesObjectsThatWork) {
  PluginRegistry registry;
  ASSERT_TRUE(registry.add_file(kFixtures / "first" / "libfixture_good.so").ok());
  const LoadedPlugin* p = registry.find(PluginFamily::decoding, "fixture_fixed");
  ASSERT_NE(p, nullptr);
  auto params = default_params(*p->info);
  ASSERT_TRUE(params.ok()) << params.status().message();
  params->set("token", int64_t{123});
  auto strategy = registry.create<DecodingStrategy>(*p, *params);
  ASSERT_TRUE(strategy.ok()) << strategy.status().message();
  std::vector<int32_t> out;
  struct NoContext : DecodingContext {
    std::span<const int32_t> proposed() const noexcept override { return {}; }
    std::span<float> logits(size_t) noexcept override { return {}; }
    std::span<const int32_t> tokens() const noexcept override { return {}; }
    int32_t prompt_length() const noexcept override { return 0; }
    const SamplingSettings& sampling() const noexcept override { return s; }
    std::mt19937_64& rng() noexcept override { return r; }
    SamplingSettings s;
    std::mt19937_64 r;
  } ctx;
  ASSERT_TRUE((*strategy)->step(ctx, out).ok());
  ASSERT_EQ(out, std::vector<int32_t>{123});
}

TEST(PluginLoader, RefusesAnotherAbiMajorNamingBothVersionsAndTheFile) {
  const fs::path file = kFixtures / "future" / "libfixture_future_abi.so";
  auto plugins = load_plugin_library(file);
  ASSERT_FALSE(plugins.ok());
  const std::string& m = plugins.status().message();
  EXPECT_NE(m.find("ABI 99."), std::string::npos) << m;
  EXPECT_NE(m.find("ABI " + std::to_string(kAbiMajor) + "."), std::string::npos) << m;
  EXPECT_NE(m.find(file.string()), std::string::npos) << m;
}

TEST(PluginLoader, RefusesANewerAbiMinorNamingBothVersions) {
  // Same major, one minor ahead: it may call a method this core does not have.
  const fs::path file = kFixtures / "newer" / "libfixture_newer_minor.so";
  auto plugins = load_plugin_library(file);
  ASSERT_FALSE(plugins.ok());
  const std::string& m = plugins.status().message();
  const std::string newer = std::to_string(kAbiMajor) + "." + std::to_string(kAbiMinor + 1);
  const std::string ours = std::to_string(kAbiMajor) + "." + std::to_string(kAbiMinor);
  EXPECT_NE(m.find("ABI " + newer), std::string::npos) << m;
  EXPECT_NE(m.find("ABI " + ours), std::string::npos) << m;
  EXPECT_NE(m.find(file.string()), std::string::npos) << m;
}

TEST(PluginLoader, RefusesALibraryWithoutTheEntrySymbol) {
  auto plugins = load_plugin_library(kFixtures / "broken" / "libfixture_no_entry.so");
  ASSERT_FALSE(plugins.ok());
  EXPECT_NE(plugins.status().message().find("tessera_plugin_entry"), std::string::npos)
      << plugins.status().message();
}

TEST(PluginLoader, RefusesAFileThatIsNotASharedLibrary) {
  const fs::path dir = test::scratch_dir("tessera_plugin_loader_test");
  fs::create_directories(dir);
  const fs::path file = dir / "libbogus.so";
  std::ofstream(file) << "this is text, not ELF\n";
  auto plugins = load_plugin_library(file);
  ASSERT_FALSE(plugins.ok());
  EXPECT_NE(plugins.status().message().find("cannot be loaded as a shared library"), std::string::npos)
      << plugins.status().message();
}

TEST(PluginLoader, RefusesAMissingFile) {
  auto plugins = load_plugin_library(kFixtures / "nowhere" / "libmissing.so");
  ASSERT_FALSE(plugins.ok());
  EXPECT_EQ(plugins.status().code(), StatusCode::not_found);
}

TEST(PluginLoader, AFactoryThatThrowsIsReportedNotACrash) {
  PluginRegistry registry;
  ASSERT_TRUE(registry.add_file(kFixtures / "first" / "libfixture_throws.so").ok());
  const LoadedPlugin* p = registry.find(PluginFamily::decoding, "fixture_throws");
  ASSERT_NE(p, nullptr);
  auto object = registry.create<DecodingStrategy>(*p, ParamValues{});
  ASSERT_FALSE(object.ok());
  EXPECT_NE(object.status().message().find("fixture factory exploded"), std::string::npos)
      << object.status().message();
  EXPECT_NE(object.status().message().find("fixture_throws"), std::string::npos);

  const LoadedPlugin* q = registry.find(PluginFamily::decoding, "fixture_fails");
  ASSERT_NE(q, nullptr);
  auto failed = registry.create<DecodingStrategy>(*q, ParamValues{});
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("fixture refuses to be made"), std::string::npos);
}

TEST(PluginLoader, CreateChecksTheFamily) {
  PluginRegistry registry;
  ASSERT_TRUE(registry.add_file(kFixtures / "first" / "libfixture_good.so").ok());
  const LoadedPlugin* p = registry.find(PluginFamily::decoding, "fixture_fixed");
  auto wrong = registry.create<SequenceMemory>(*p, *default_params(*p->info));
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("not a kvcache plugin"), std::string::npos);
}

TEST(PluginSearch, FirstFolderWinsAndTheDuplicateIsRecorded) {
  PluginRegistry registry;
  registry.scan({kFixtures / "second", kFixtures / "first"});
  const LoadedPlugin* p = registry.find(PluginFamily::decoding, "fixture_fixed");
  ASSERT_NE(p, nullptr);
  EXPECT_STREQ(p->info->version, "2.0");
  bool recorded = false;
  for (const auto& r : registry.rejections()) {
    if (r.reason.find("already provided by") != std::string::npos) recorded = true;
  }
  EXPECT_TRUE(recorded);

  PluginRegistry reversed;
  reversed.scan({kFixtures / "first", kFixtures / "second"});
  EXPECT_STREQ(reversed.find(PluginFamily::decoding, "fixture_fixed")->info->version, "1.0");
}

// One registry serving several pipelines scans the same folders again: its
// own libraries are not duplicates of themselves.
TEST(PluginSearch, ScanningAFolderAgainAddsNothing) {
  PluginRegistry registry;
  registry.scan({kFixtures / "first"});
  const size_t plugins = registry.plugins().size(), rejections = registry.rejections().size();
  ASSERT_GT(plugins, 0u);
  registry.scan({kFixtures / "first", kFixtures / ".." / "plugins" / "first"});
  EXPECT_EQ(registry.plugins().size(), plugins);
  EXPECT_EQ(registry.rejections().size(), rejections);
  EXPECT_EQ(registry.searched().size(), 1u);
}

TEST(PluginSearch, ScanRecordsRejectionsWithReasons) {
  PluginRegistry registry;
  // A folder a user named that does not exist is only a warning.
  registry.scan({kFixtures / "future", kFixtures / "broken", kFixtures / "does-not-exist"});
  EXPECT_TRUE(registry.plugins().empty());
  ASSERT_EQ(registry.rejections().size(), 2u);
  EXPECT_EQ(registry.searched().size(), 3u);
}

TEST(PluginSearch, OrderIsPipelineThenEnvironmentThenPrefixThenExecutable) {
  ::setenv("TESSERA_PLUGIN_PATH", "/tmp/tessera-env-a:/tmp/tessera-env-b", 1);
  auto path = plugin_search_path({"/tmp/tessera-pipeline"});
  ::unsetenv("TESSERA_PLUGIN_PATH");
  ASSERT_GE(path.size(), 5u);
  EXPECT_EQ(path[0].path, fs::path("/tmp/tessera-pipeline"));
  EXPECT_EQ(path[1].path, fs::path("/tmp/tessera-env-a"));
  EXPECT_EQ(path[2].path, fs::path("/tmp/tessera-env-b"));
  EXPECT_EQ(path[3].path, fs::weakly_canonical(TESSERA_INSTALL_PLUGIN_DIR));
  EXPECT_EQ(path.back().path.filename(), "plugins");
  // Folders a user named may be typos worth a warning; the built-in ones may simply be absent.
  EXPECT_TRUE(path[0].named_by_user && path[1].named_by_user && path[2].named_by_user);
  EXPECT_FALSE(path[3].named_by_user || path.back().named_by_user);
}

TEST(PluginSearch, DuplicateFoldersAreSearchedOnce) {
  auto path = plugin_search_path({"/tmp/x", "/tmp/x/", "/tmp/y/../x"});
  EXPECT_EQ(std::count_if(path.begin(), path.end(), [](const PluginFolder& f) { return f.path == "/tmp/x"; }), 1);
}

// ---- ABI 3.0's checks -------------------------------------------------------

TEST(PluginAbi, AnotherCxxStandardLibraryIsRefusedNamingBoth) {
  // Built with libstdc++'s pre-C++11 std::string: every string crossing would be misread.
  const fs::path file = kFixtures / "old_abi" / "libfixture_old_string_abi.so";
  auto plugins = load_plugin_library(file);
  ASSERT_FALSE(plugins.ok());
  const std::string& m = plugins.status().message();
  EXPECT_NE(m.find("libstdc++ (pre-C++11 ABI)"), std::string::npos) << m;
  EXPECT_NE(m.find(TESSERA_CXX_RUNTIME), std::string::npos) << m;
  EXPECT_NE(m.find(file.string()), std::string::npos) << m;
}

TEST(PluginAbi, ObjectsReportTheMinorTheirLibraryWasBuiltFor) {
  PluginRegistry registry;
  ASSERT_TRUE(registry.add_file(kFixtures / "minor0" / "libfixture_minor_0.so").ok());
  ASSERT_TRUE(registry.add_file(kFixtures / "minor_sdk" / "libfixture_minor_sdk.so").ok());
  const LoadedPlugin* old_one = registry.find(PluginFamily::decoding, "fixture_minor_0");
  const LoadedPlugin* new_one = registry.find(PluginFamily::decoding, "fixture_minor_sdk");
  ASSERT_NE(old_one, nullptr);
  ASSERT_NE(new_one, nullptr);
  EXPECT_EQ(old_one->abi_minor, 0u);
  EXPECT_EQ(new_one->abi_minor, kAbiMinor);
  auto a = registry.create<DecodingStrategy>(*old_one, ParamValues{});
  auto b = registry.create<DecodingStrategy>(*new_one, ParamValues{});
  ASSERT_TRUE(a.ok() && b.ok());
  // Each object answers with its own library's minor (hidden visibility: no
  // library's copy of abi_minor() stands in for another's).
  EXPECT_EQ((*a)->abi_minor(), 0u);
  EXPECT_EQ((*b)->abi_minor(), kAbiMinor);
  EXPECT_FALSE(provides(**a, 1));
  EXPECT_TRUE(provides(**b, 1));
}

TEST(PluginAbi, AFactoryThatThrowsThroughNoexceptExitsNamingThePlugin) {
  PluginRegistry registry;
  ASSERT_TRUE(registry.add_file(kFixtures / "noexcept" / "libfixture_throws_noexcept.so").ok());
  const LoadedPlugin* p = registry.find(PluginFamily::decoding, "fixture_throws_noexcept");
  ASSERT_NE(p, nullptr);
  EXPECT_EXIT((void)registry.create<DecodingStrategy>(*p, ParamValues{}), ::testing::ExitedWithCode(1),
              "decoding plugin 'fixture_throws_noexcept' .*libfixture_throws_noexcept.so.* threw 'fixture noexcept "
              "factory exploded' out of its factory, which is declared noexcept");
}

TEST(PluginSearch, WhyMissingNamesTheRejectedFilesThatMightHaveProvidedIt) {
  PluginRegistry registry;
  registry.scan({kFixtures / "first", kFixtures / "future"});
  EXPECT_EQ(registry.why_missing(PluginFamily::decoding, "fixture_fixed"), "") << "found: nothing to explain";
  const std::string why = registry.why_missing(PluginFamily::decoding, "future");
  EXPECT_NE(why.find("libfixture_future_abi.so"), std::string::npos) << why;
  EXPECT_NE(why.find("ABI 99."), std::string::npos) << why;
}

}  // namespace
}  // namespace tessera
