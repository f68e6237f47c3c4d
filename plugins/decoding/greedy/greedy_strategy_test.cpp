// Greedy decoding: argmax, ties to the lowest id, bad logits reported.
#include "greedy_strategy.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>

#include "fake_decoding_context.hpp"
#include "plugin_loading.hpp"
#include "plugin_test_support.hpp"
#include "tessera/argmax.hpp"

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

// The plain loop the vectorized argmax must agree with.
int32_t scalar_argmax(const std::vector<float>& x) {
  int32_t best = 0;
  for (size_t i = 1; i < x.size(); ++i)
    if (x[i] > x[static_cast<size_t>(best)]) best = static_cast<int32_t>(i);
  return best;
}

TEST(GreedyStrategy, VocabularySizedLogitsMatchThePlainLoop) {
  // Long enough for every vector lane and an odd tail (49152 + 5): the
  // maximum placed at the start, in the body, in the tail, tied across lanes.
  std::mt19937 rng(3);
  std::normal_distribution<float> logit(0.0f, 3.0f);
  std::vector<float> x(49157);
  for (float& v : x) v = logit(rng);
  for (size_t at : {size_t{0}, size_t{1}, size_t{4099}, x.size() - 3, x.size() - 1}) {
    std::vector<float> y = x;
    y[at] = 100.0f;
    EXPECT_EQ(*argmax_token(y), static_cast<int32_t>(at)) << at;
    EXPECT_EQ(*argmax_token(y), scalar_argmax(y)) << at;
  }
  std::vector<float> ties = x;
  for (size_t at : {size_t{17}, size_t{18}, size_t{30001}}) ties[at] = 50.0f;
  EXPECT_EQ(*argmax_token(ties), 17);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(*argmax_token(std::vector<float>(1000, -inf)), 0);
  for (size_t at : {size_t{5}, x.size() - 2}) {
    std::vector<float> bad = x;
    bad[at] = std::nanf("");
    const auto r = argmax_token(bad);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("logit " + std::to_string(at)), std::string::npos) << r.status().message();
  }
}

// The maximum is found over integer keys (tessera/argmax.hpp): their order
// must be the floats' order across signs, zeros, subnormals and infinities.
TEST(GreedyStrategy, OrderKeysFollowTheFloats) {
  const float inf = std::numeric_limits<float>::infinity();
  const float tiny = std::numeric_limits<float>::denorm_min();
  const float big = std::numeric_limits<float>::max();
  const std::vector<float> ascending{-inf, -big, -1.5f, -1.0f, -tiny, 0.0f, tiny, 1.0f, 1.5f, big, inf};
  for (size_t i = 0; i + 1 < ascending.size(); ++i) {
    EXPECT_LT(float_order_key(ascending[i]), float_order_key(ascending[i + 1])) << ascending[i];
    EXPECT_EQ(float_from_order_key(float_order_key(ascending[i])), ascending[i]);
  }
  EXPECT_LT(float_order_key(-0.0f), float_order_key(0.0f));
  EXPECT_GT(float_order_key(-0.0f), float_order_key(-tiny));
}

TEST(GreedyStrategy, ArgmaxOfNegativesZerosAndInfinities) {
  // All negative: the one nearest zero wins, wherever it sits.
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> negative(-40.0f, -1.0f);
  std::vector<float> x(4099);
  for (float& v : x) v = negative(rng);
  x[2050] = -0.5f;
  EXPECT_EQ(*argmax_token(x), 2050);
  EXPECT_EQ(*argmax_token(x), scalar_argmax(x));
  // -0.0 and +0.0 are equal logits: the lower id wins whichever sign it has.
  x[7] = -0.0f;
  x[9] = 0.0f;
  EXPECT_EQ(*argmax_token(x), 7);
  x[7] = 0.0f;
  x[9] = -0.0f;
  EXPECT_EQ(*argmax_token(x), 7);
  // Subnormals order above zero; +inf above everything.
  x[3000] = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(*argmax_token(x), 3000);
  x[4098] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(*argmax_token(x), 4098);
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

// Verification (speculative decoding): three proposed tokens, four rows of logits.
std::vector<int32_t> verify(const std::vector<int32_t>& row_argmax, const std::vector<int32_t>& proposed) {
  std::vector<float> logits(row_argmax.size() * 6, 0.0f);
  for (size_t r = 0; r < row_argmax.size(); ++r) logits[r * 6 + static_cast<size_t>(row_argmax[r])] = 1.0f;
  test::FakeDecodingContext ctx(std::move(logits), {1, 2}, SamplingSettings{}, 2, proposed);
  GreedyStrategy greedy({});
  std::vector<int32_t> out;
  EXPECT_TRUE(greedy.verify(ctx, out).ok());
  return out;
}

TEST(GreedyStrategy, VerifyKeepsTheMatchingPrefixThenItsOwnChoice) {
  EXPECT_EQ(verify({3, 4, 5, 0}, {3, 4, 5}), (std::vector<int32_t>{3, 4, 5, 0})) << "all kept, then the bonus";
  EXPECT_EQ(verify({3, 4, 5, 0}, {3, 1, 5}), (std::vector<int32_t>{3, 4})) << "the first mismatch is replaced";
  EXPECT_EQ(verify({2, 4, 5, 0}, {3, 4, 5}), (std::vector<int32_t>{2})) << "nothing kept";
  EXPECT_EQ(verify({2}, {}), (std::vector<int32_t>{2})) << "no proposal: an ordinary step";
}

TEST(GreedyStrategy, DistributionIsAPointMassOnTheArgmax) {
  test::FakeDecodingContext ctx({0.5f, 2.0f, -1.0f, 2.0f}, {}, SamplingSettings{});
  GreedyStrategy greedy({});
  std::vector<float> probs(4, -1.0f);
  ASSERT_TRUE(greedy.distribution(ctx, probs).ok());
  EXPECT_EQ(probs, (std::vector<float>{0.0f, 1.0f, 0.0f, 0.0f})) << "ties to the lowest id, as step()";
  std::vector<float> wrong(3);
  EXPECT_EQ(greedy.distribution(ctx, wrong).code(), StatusCode::invalid_argument);
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
