// Sampling: each filter on hand-made logits, the strategy end to end,
// reproducibility under a seed, and a chi-squared check that draws follow the
// filtered distribution (fixed seed, so the check is deterministic, and a
// 1e-4 significance bound, so a correct sampler passes with a wide margin).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "fake_decoding_context.hpp"
#include "greedy_strategy.hpp"
#include "plugin_loading.hpp"
#include "plugin_test_support.hpp"
#include "sampling_filters.hpp"
#include "sampling_strategy.hpp"

namespace tessera::plugins {
const PluginLibrary* sampling_decoding_entry();
}

namespace tessera::plugins {
namespace {

using sampling::Candidate;

std::vector<int32_t> ids_of(const std::vector<Candidate>& candidates) {
  std::vector<int32_t> ids;
  for (const Candidate& c : candidates) ids.push_back(c.id);
  return ids;
}

double prob_sum(const std::vector<Candidate>& candidates) {
  double s = 0.0;
  for (const Candidate& c : candidates) s += c.prob;
  return s;
}

// log of these probabilities, so softmax gives them back: 0.5, 0.3, 0.15, 0.05.
std::vector<float> four_token_logits() {
  return {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
}

std::vector<Candidate> distribution(const std::vector<float>& logits, double temperature = 1.0) {
  auto c = sampling::top_k_candidates(logits, 0);
  sampling::softmax(c, temperature);
  return c;
}

SamplingSettings plain(uint64_t seed = 1) {
  SamplingSettings s;
  s.seed = seed;
  s.repetition_penalty = 1.0;
  return s;
}

int32_t sample_once(std::vector<float> logits, const SamplingSettings& settings,
                    std::vector<int32_t> tokens = {}) {
  test::FakeDecodingContext ctx(std::move(logits), std::move(tokens), settings);
  SamplingStrategy strategy({});
  std::vector<int32_t> out;
  const Status st = strategy.step(ctx, out);
  EXPECT_TRUE(st.ok()) << st.message();
  return out.empty() ? -1 : out[0];
}

TEST(SamplingStrategy, EntryDescribesThePlugin) {
  const PluginInfo& info = test::expect_single_plugin(sampling_decoding_entry(), PluginFamily::decoding, "sampling");
  std::string error;
  std::unique_ptr<PluginObject> object(info.create(test::default_params(info), &error));
  EXPECT_NE(object, nullptr) << error;
}

TEST(SamplingFilters, RepetitionPenaltyFollowsTheCtrlRule) {
  std::vector<float> logits{2.0f, -2.0f, 1.0f, 3.0f};
  const std::vector<int32_t> recent{0, 1, 0};  // token 0 twice: penalized once
  ASSERT_TRUE(sampling::apply_repetition_penalty(logits, recent, 2.0).ok());
  EXPECT_EQ(logits, (std::vector<float>{1.0f, -4.0f, 1.0f, 3.0f}));

  std::vector<float> unchanged{2.0f, -2.0f};
  ASSERT_TRUE(sampling::apply_repetition_penalty(unchanged, recent, 1.0).ok());
  EXPECT_EQ(unchanged, (std::vector<float>{2.0f, -2.0f}));

  const std::vector<int32_t> foreign{7};
  const Status st = sampling::apply_repetition_penalty(logits, foreign, 1.5);
  EXPECT_EQ(st.code(), StatusCode::invalid_argument);
  EXPECT_NE(st.message().find("token 7"), std::string::npos) << st.message();
}

TEST(SamplingFilters, PenaltyWindowIsTheLastTokens) {
  const std::vector<int32_t> tokens{5, 6, 7, 8};
  EXPECT_EQ(sampling::penalty_window(tokens, 2).size(), 2u);
  EXPECT_EQ(sampling::penalty_window(tokens, 2)[0], 7);
  EXPECT_EQ(sampling::penalty_window(tokens, 0).size(), 0u);
  EXPECT_EQ(sampling::penalty_window(tokens, 10).size(), 4u);
  EXPECT_EQ(sampling::penalty_window(tokens, -1).size(), 4u);
}

TEST(SamplingFilters, TopKKeepsTheBestWithTiesToLowerIds) {
  const std::vector<float> logits{1.0f, 5.0f, 3.0f, 5.0f, 2.0f};
  EXPECT_EQ(ids_of(sampling::top_k_candidates(logits, 2)), (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(ids_of(sampling::top_k_candidates(logits, 3)), (std::vector<int32_t>{1, 3, 2}));
  EXPECT_EQ(ids_of(sampling::top_k_candidates(logits, 0)), (std::vector<int32_t>{1, 3, 2, 4, 0}));
  EXPECT_EQ(ids_of(sampling::top_k_candidates(logits, 99)).size(), 5u);
  const std::vector<float> flat{4.0f, 4.0f, 4.0f};
  EXPECT_EQ(ids_of(sampling::top_k_candidates(flat, 2)), (std::vector<int32_t>{0, 1}));
  const float ninf = -std::numeric_limits<float>::infinity();
  const std::vector<float> masked{ninf, 1.0f, ninf, 0.0f};
  EXPECT_EQ(ids_of(sampling::top_k_candidates(masked, 0)), (std::vector<int32_t>{1, 3}));
}

TEST(SamplingFilters, TemperatureSharpensOrFlattens) {
  const std::vector<float> logits{std::log(2.0f), 0.0f};  // 2 : 1 at temperature 1
  EXPECT_NEAR(distribution(logits, 1.0)[0].prob, 2.0 / 3.0, 1e-6);
  EXPECT_NEAR(distribution(logits, 0.5)[0].prob, 4.0 / 5.0, 1e-6);  // 2^2 : 1
  EXPECT_NEAR(distribution(logits, 2.0)[0].prob, std::sqrt(2.0) / (std::sqrt(2.0) + 1.0), 1e-6);
  // A vanishing temperature tends to the argmax instead of overflowing.
  const auto cold = distribution({1000.0f, 999.0f}, 1e-300);
  EXPECT_EQ(cold[0].prob, 1.0);
  EXPECT_EQ(cold[1].prob, 0.0);
}

TEST(SamplingFilters, TopPKeepsTheShortestPrefixReachingP) {
  const auto logits = four_token_logits();  // 0.5, 0.3, 0.15, 0.05
  auto expect_top_p = [&](double p, std::vector<int32_t> expected) {
    auto c = distribution(logits);
    sampling::keep_top_p(c, p);
    EXPECT_EQ(ids_of(c), expected) << "top_p " << p;
    EXPECT_NEAR(prob_sum(c), 1.0, 1e-12);
  };
  expect_top_p(0.45, {0});
  expect_top_p(0.79, {0, 1});
  expect_top_p(0.81, {0, 1, 2});
  expect_top_p(0.96, {0, 1, 2, 3});
  expect_top_p(1.0, {0, 1, 2, 3});
  auto c = distribution(logits);
  sampling::keep_top_p(c, 0.79);
  EXPECT_NEAR(c[0].prob, 0.5 / 0.8, 1e-6) << "renormalized over the survivors";
}

TEST(SamplingFilters, MinPIsRelativeToTheLargestProbability) {
  const auto logits = four_token_logits();  // 0.5, 0.3, 0.15, 0.05
  auto expect_min_p = [&](double p, std::vector<int32_t> expected) {
    auto c = distribution(logits);
    sampling::keep_min_p(c, p);
    EXPECT_EQ(ids_of(c), expected) << "min_p " << p;
    EXPECT_NEAR(prob_sum(c), 1.0, 1e-12);
  };
  expect_min_p(0.0, {0, 1, 2, 3});
  expect_min_p(0.09, {0, 1, 2, 3});  // threshold 0.045
  expect_min_p(0.2, {0, 1, 2});      // threshold 0.1
  expect_min_p(0.5, {0, 1});         // threshold 0.25
  expect_min_p(0.7, {0});            // threshold 0.35
  expect_min_p(1.0, {0});
}

TEST(SamplingStrategy, TemperatureZeroEqualsGreedy) {
  std::mt19937_64 gen(3);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  GreedyStrategy greedy({});
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<float> logits(97);
    for (float& x : logits) x = normal(gen);
    SamplingSettings s = plain(static_cast<uint64_t>(trial));
    s.temperature = 0.0;
    s.top_k = 5;  // ignored at temperature 0
    test::FakeDecodingContext ctx(logits, {}, s);
    std::vector<int32_t> expected;
    ASSERT_TRUE(greedy.step(ctx, expected).ok());
    EXPECT_EQ(sample_once(logits, s), expected[0]);
  }
  SamplingSettings s = plain();
  s.temperature = 0.0;
  EXPECT_EQ(sample_once({1.0f, 3.0f, 3.0f}, s), 1) << "ties to the lowest id, as greedy";
}

TEST(SamplingStrategy, PenaltyCanChangeTheGreedyChoice) {
  SamplingSettings s = plain();
  s.temperature = 0.0;
  s.repetition_penalty = 2.0;
  s.repeat_last_n = 1;
  // Token 0 (logit 3) was just generated: 3 / 2 = 1.5 < 2, so token 1 wins.
  EXPECT_EQ(sample_once({3.0f, 2.0f}, s, {1, 0}), 1);
  // With a window of one, token 1 two steps back is not penalized.
  EXPECT_EQ(sample_once({2.0f, 3.0f}, s, {1, 0}), 1);
  s.repeat_last_n = 0;
  EXPECT_EQ(sample_once({3.0f, 2.0f}, s, {1, 0}), 0);
}

TEST(SamplingStrategy, FilteredTokensAreNeverDrawn) {
  SamplingSettings s = plain(11);
  s.top_k = 3;
  s.temperature = 5.0;  // flat, so every survivor is drawn often
  test::FakeDecodingContext ctx({1.0f, 4.0f, 3.0f, 0.0f, 3.5f, -2.0f}, {}, s);
  SamplingStrategy strategy({});
  std::set<int32_t> seen;
  for (int i = 0; i < 500; ++i) {
    std::vector<int32_t> out;
    ASSERT_TRUE(strategy.step(ctx, out).ok());
    seen.insert(out.at(0));
  }
  EXPECT_EQ(seen, (std::set<int32_t>{1, 2, 4}));
}

TEST(SamplingStrategy, SameSeedSameTokensDifferentSeedDifferentTokens) {
  auto run = [](uint64_t seed) {
    SamplingSettings s = plain(seed);
    s.temperature = 1.0;
    test::FakeDecodingContext ctx(std::vector<float>(50, 0.0f), {}, s);  // uniform over 50 tokens
    SamplingStrategy strategy({});
    std::vector<int32_t> out;
    for (int i = 0; i < 64; ++i) EXPECT_TRUE(strategy.step(ctx, out).ok());
    return out;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

TEST(SamplingStrategy, DrawsFollowTheFilteredDistribution) {
  // Temperature 0.7, top-k 5 keeps {0, 1, 2, 3, 6}; their probabilities are
  // 0.551, 0.270, 0.132, 0.032, 0.016, so top-p 0.97 keeps {0, 1, 2, 3}
  // (cumulative 0.985), and min-p 0.05 keeps all four (the smallest is 0.057 of
  // the largest). Expected: softmax(logit / 0.7) over {0, 1, 2, 3}.
  const std::vector<float> logits{3.0f, 2.5f, 2.0f, 1.0f, 0.0f, -1.0f, 0.5f};
  const std::vector<int32_t> survivors{0, 1, 2, 3};
  SamplingSettings s = plain(20240601);
  s.temperature = 0.7;
  s.top_k = 5;
  s.top_p = 0.97;
  s.min_p = 0.05;

  std::vector<double> expected(logits.size(), 0.0);
  double total = 0.0;
  for (int32_t id : survivors) total += std::exp(logits[static_cast<size_t>(id)] / 0.7);
  for (int32_t id : survivors) expected[static_cast<size_t>(id)] = std::exp(logits[static_cast<size_t>(id)] / 0.7) / total;

  constexpr int kDraws = 20000;
  std::vector<int> counts(logits.size(), 0);
  test::FakeDecodingContext ctx(logits, {}, s);
  SamplingStrategy strategy({});
  for (int i = 0; i < kDraws; ++i) {
    std::vector<int32_t> out;
    ASSERT_TRUE(strategy.step(ctx, out).ok());
    ++counts.at(static_cast<size_t>(out.at(0)));
  }
  double chi2 = 0.0;
  for (size_t id = 0; id < logits.size(); ++id) {
    if (expected[id] == 0.0) {
      EXPECT_EQ(counts[id], 0) << "token " << id << " was filtered out but drawn";
      continue;
    }
    const double e = expected[id] * kDraws;
    chi2 += (counts[id] - e) * (counts[id] - e) / e;
  }
  // Chi-squared, 3 degrees of freedom: P(chi2 > 21.11) = 1e-4.
  EXPECT_LT(chi2, 21.11);
}

TEST(SamplingStrategy, RejectsBadSettingsAndLogits) {
  SamplingStrategy strategy({});
  auto status_of = [&](std::vector<float> logits, const SamplingSettings& s, std::vector<int32_t> tokens = {}) {
    test::FakeDecodingContext ctx(std::move(logits), std::move(tokens), s);
    std::vector<int32_t> out;
    const Status st = strategy.step(ctx, out);
    EXPECT_TRUE(st.ok() || out.empty()) << "nothing appended on error";
    return st;
  };
  const std::vector<float> ok{1.0f, 2.0f};
  SamplingSettings s = plain();
  s.temperature = -0.5;
  EXPECT_EQ(status_of(ok, s).code(), StatusCode::invalid_argument);
  s = plain();
  s.top_p = 0.0;
  EXPECT_EQ(status_of(ok, s).code(), StatusCode::invalid_argument);
  s = plain();
  s.min_p = 1.5;
  EXPECT_EQ(status_of(ok, s).code(), StatusCode::invalid_argument);
  s = plain();
  s.top_k = -1;
  EXPECT_EQ(status_of(ok, s).code(), StatusCode::invalid_argument);
  s = plain();
  s.repetition_penalty = 0.0;
  EXPECT_EQ(status_of(ok, s).code(), StatusCode::invalid_argument);
  s = plain();
  s.repeat_last_n = -2;
  EXPECT_EQ(status_of(ok, s).code(), StatusCode::invalid_argument);

  s = plain();
  EXPECT_EQ(status_of({}, s).code(), StatusCode::invalid_argument);
  EXPECT_EQ(status_of({1.0f, std::nanf("")}, s).code(), StatusCode::corrupt_data);
  EXPECT_EQ(status_of({1.0f, std::numeric_limits<float>::infinity()}, s).code(), StatusCode::corrupt_data);
  const float ninf = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(status_of({ninf, ninf}, s).code(), StatusCode::invalid_argument);
  s.repetition_penalty = 1.3;
  EXPECT_EQ(status_of(ok, s, {0, 5}).code(), StatusCode::invalid_argument) << "token 5 is outside a vocab of 2";
}

// distribution() is what step() draws from: the same probabilities after the
// same filters, and a point mass at temperature 0.
TEST(SamplingStrategy, DistributionIsWhatStepDrawsFrom) {
  SamplingSettings s = plain(3);
  s.temperature = 0.8;
  s.top_k = 4;
  s.top_p = 0.95;
  const std::vector<float> logits = {1.0f, 2.5f, -0.5f, 2.0f, 0.3f, 1.7f};
  SamplingStrategy strategy({});
  test::FakeDecodingContext ctx(logits, {}, s);
  std::vector<float> probs(logits.size());
  ASSERT_TRUE(strategy.distribution(ctx, probs).ok());
  double total = 0;
  for (float p : probs) total += p;
  EXPECT_NEAR(total, 1.0, 1e-6);
  EXPECT_EQ(probs[2], 0.0f) << "outside the top 4";
  constexpr int kDraws = 20000;
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < kDraws; ++i) {
    SamplingSettings seeded = s;
    seeded.seed = static_cast<uint64_t>(i);
    ++counts[static_cast<size_t>(sample_once(logits, seeded))];
  }
  for (size_t t = 0; t < logits.size(); ++t) {
    // Binomial standard deviation over kDraws, at most ~71 draws: 5 of them.
    EXPECT_NEAR(counts[t], probs[t] * kDraws, 5 * std::sqrt(kDraws * 0.25)) << "token " << t;
  }
  s.temperature = 0;
  test::FakeDecodingContext greedy_ctx(logits, {}, s);
  ASSERT_TRUE(strategy.distribution(greedy_ctx, probs).ok());
  EXPECT_EQ(probs, (std::vector<float>{0, 1, 0, 0, 0, 0}));
}

// Verifying a proposed token the default way (step() at that row, kept if
// equal) accepts it with probability p(token), and otherwise emits a token
// distributed as p without it: the emitted first token is distributed as p.
TEST(SamplingStrategy, VerifyingAProposalKeepsTheTargetDistribution) {
  const std::vector<float> row = {1.0f, 0.0f, 0.5f, -0.5f};
  std::vector<float> two_rows = row;
  two_rows.insert(two_rows.end(), row.begin(), row.end());
  SamplingSettings s = plain();
  SamplingStrategy strategy({});
  test::FakeDecodingContext probe(row, {}, s);
  std::vector<float> p(row.size());
  ASSERT_TRUE(strategy.distribution(probe, p).ok());
  constexpr int kTrials = 20000;
  std::vector<int> first(row.size(), 0);
  int kept = 0;
  for (int i = 0; i < kTrials; ++i) {
    s.seed = static_cast<uint64_t>(i);
    test::FakeDecodingContext ctx(two_rows, {}, s, 0, {0});  // the draft says token 0
    std::vector<int32_t> out;
    ASSERT_TRUE(strategy.verify(ctx, out).ok());
    ++first[static_cast<size_t>(out[0])];
    kept += out.size() == 2 ? 1 : 0;
  }
  for (size_t t = 0; t < row.size(); ++t)
    EXPECT_NEAR(first[t], p[t] * kTrials, 5 * std::sqrt(kTrials * 0.25)) << "token " << t;
  EXPECT_NEAR(kept, p[0] * kTrials, 5 * std::sqrt(kTrials * 0.25)) << "token 0 is kept with probability p(0)";
}

TEST(SamplingStrategy, BuiltLibraryLoadsAndDescribesThePlugin) {
  test::LoadedLibrary loaded = test::load_built_plugin("libtessera_decoding_sampling.so");
  ASSERT_NE(loaded.entry, nullptr);
  const PluginInfo& info = test::expect_single_plugin(loaded.entry, PluginFamily::decoding, "sampling");
  std::string error;
  std::unique_ptr<PluginObject> object(info.create(test::default_params(info), &error));
  EXPECT_NE(object, nullptr) << error;
}

}  // namespace
}  // namespace tessera::plugins
