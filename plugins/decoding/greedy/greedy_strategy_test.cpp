// Greedy decoding: argmax, ties to the lowest id, bad logits reported.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>

#include "fake_decoding_context.hpp"
#include "greedy_strategy.hpp"
#include "plugin_loading.hpp"
#include "plugin_test_support.hpp"

namespace tessera::plugins {
const PluginLibrary* greedy_decoding_entry();
}

namespace tessera::plugins {
namespace {

Result<int32_t> pick(std::vector<float> logits) {
  test::FakeDecodingContext ctx(std::move(logits), {}, SamplingSettings{});
  GreedyStrategy greedy({});
  std::vector<int32_t> out;
  Status st = greedy.step(ctx, out);
  if (!st.ok()) return st;
  EXPECT_EQ(out.size(), 1u);
  return out.at(0);
}

TEST(GreedyStrategy, EntryDescribesThePlugin) {
  const PluginInfo& info = test::expect_single_plugin(greedy_decoding_entry(), PluginFamily::decoding, "greedy");
  std::string error;
  std::unique_ptr<PluginObject> object(info.create(test::default_params(info), &error));
  EXPECT_NE(object, nullptr) << error;
}

TEST(GreedyStrategy, PicksTheLargestLogit) {
  EXPECT_EQ(*pick({0.1f, -3.0f, 2.5f, 2.4f}), 2);
  EXPECT_EQ(*pick({-5.0f, -1.0f, -2.0f}), 1);
  EXPECT_EQ(*pick({7.0f}), 0);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(*pick({-inf, -inf, 1.0f, -inf}), 2);
}

TEST(GreedyStrategy, TiesGoToTheLowestId) {
  EXPECT_EQ(*pick({1.0f, 3.0f, 0.0f, 3.0f, 3.0f}), 1);
  EXPECT_EQ(*pick({2.0f, 2.0f}), 0);
}

TEST(GreedyStrategy, AppendsWithoutClearingTheOutput) {
  test::FakeDecodingContext ctx({0.0f, 1.0f}, {}, SamplingSettings{});
  GreedyStrategy greedy({});
  std::vector<int32_t> out{42};
  ASSERT_TRUE(greedy.step(ctx, out).ok());
  EXPECT_EQ(out, (std::vector<int32_t>{42, 1}));
}

TEST(GreedyStrategy, ReportsEmptyAndNanLogits) {
  EXPECT_EQ(pick({}).status().code(), StatusCode::invalid_argument);
  const auto nan = pick({1.0f, std::nanf(""), 0.0f});
  EXPECT_EQ(nan.status().code(), StatusCode::corrupt_data);
  EXPECT_NE(nan.status().message().find("logit 1"), std::string::npos) << nan.status().message();
}

TEST(GreedyStrategy, BuiltLibraryLoadsAndDescribesThePlugin) {
  test::LoadedLibrary loaded = test::load_built_plugin("libtessera_decoding_greedy.so");
  ASSERT_NE(loaded.entry, nullptr);
  const PluginInfo& info = test::expect_single_plugin(loaded.entry, PluginFamily::decoding, "greedy");
  std::string error;
  std::unique_ptr<PluginObject> object(info.create(test::default_params(info), &error));
  EXPECT_NE(object, nullptr) << error;
}

}  // namespace
}  // namespace tessera::plugins
