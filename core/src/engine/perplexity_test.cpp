// compute_perplexity against plain scorers over a byte vocabulary: the
// perplexity of known distributions, and a reference model's KL divergence,
// paired ratio and top-token agreement recomputed here in the obvious way.
#include "engine/perplexity.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "engine/fakes_testing.hpp"

namespace tessera {
namespace {

constexpr int64_t kVocab = 257;  // byte_tokenizer: 256 bytes and an end token

std::string sample_text() {
  std::string text;
  for (int i = 0; i < 80; ++i) text += static_cast<char>('a' + (i * 7) % 26);
  return text;
}

// Logits that depend on the position and the token before: a different,
// peaked distribution at every position.
std::vector<float> varied_logits(std::span<const int32_t> tokens, float sharpness) {
  std::vector<float> logits(tokens.size() * kVocab);
  for (size_t j = 0; j < tokens.size(); ++j)
    for (int64_t v = 0; v < kVocab; ++v)
      logits[j * kVocab + static_cast<size_t>(v)] =
          sharpness *
          static_cast<float>(std::sin(0.37 * static_cast<double>(v) * static_cast<double>(j + 1) + 0.11 * tokens[j]));
  return logits;
}

WindowScorer uniform_scorer() {
  return [](std::span<const int32_t> tokens) -> Result<std::vector<float>> {
    return std::vector<float>(tokens.size() * kVocab, 0.0f);
  };
}

WindowScorer varied_scorer(float sharpness) {
  return [sharpness](std::span<const int32_t> tokens) -> Result<std::vector<float>> {
    return varied_logits(tokens, sharpness);
  };
}

TEST(Perplexity, OfAUniformModelIsTheVocabularySize) {
  const auto tokenizer = testing::byte_tokenizer();
  auto r = compute_perplexity(tokenizer, 1024, kVocab, uniform_scorer(), sample_text(), 16);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->windows, 5);
  EXPECT_EQ(r->scored_tokens, 5 * 7);
  EXPECT_NEAR(r->ppl, static_cast<double>(kVocab), 1e-9);
  EXPECT_NEAR(r->ppl_uncertainty, 0.0, 1e-9);
  EXPECT_FALSE(r->against_reference.has_value());
}

TEST(Perplexity, AgainstItselfAModelHasNoDivergence) {
  const auto tokenizer = testing::byte_tokenizer();
  auto r = compute_perplexity(tokenizer, 1024, kVocab, varied_scorer(3), sample_text(), 16, 0, {}, varied_scorer(3));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->against_reference.has_value());
  const ReferenceComparison& c = *r->against_reference;
  EXPECT_NEAR(c.reference_ppl, r->ppl, 1e-12);
  EXPECT_NEAR(c.mean_kl_divergence, 0.0, 1e-12);
  EXPECT_NEAR(c.max_kl_divergence, 0.0, 1e-12);
  EXPECT_NEAR(c.ppl_ratio, 1.0, 1e-12);
  EXPECT_NEAR(c.ppl_ratio_uncertainty, 0.0, 1e-12);
  EXPECT_EQ(c.same_top_token, 1.0);
}

// A uniform model against a peaked reference: KL(p ‖ uniform) = Σ p log p + log V
// at each position, and the paired log-ratio is log V + log p(target).
TEST(Perplexity, AgainstAReferenceMatchesTheDefinitions) {
  const auto tokenizer = testing::byte_tokenizer();
  const std::string text = sample_text();
  const int64_t ctx = 16;
  auto r = compute_perplexity(tokenizer, 1024, kVocab, uniform_scorer(), text, ctx, 0, {}, varied_scorer(4));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->against_reference.has_value());

  const std::vector<int32_t> tokens = tokenizer.encode(text, std::nullopt, false);
  std::vector<double> kl, log_ratio, reference_nll;
  int64_t same_top = 0;
  for (int64_t w = 0; w < r->windows; ++w) {
    const std::span<const int32_t> window(tokens.data() + w * ctx, static_cast<size_t>(ctx));
    const std::vector<float> logits = varied_logits(window, 4);
    for (int64_t j = ctx / 2; j < ctx - 1; ++j) {
      std::vector<double> p(kVocab);
      double z = 0;
      for (int64_t v = 0; v < kVocab; ++v) z += p[v] = std::exp(static_cast<double>(logits[j * kVocab + v]));
      double sum_p_log_p = 0;
      for (double& x : p) {
        x /= z;
        sum_p_log_p += x * std::log(x);
      }
      kl.push_back(sum_p_log_p + std::log(static_cast<double>(kVocab)));
      const double nll = -std::log(p[static_cast<size_t>(window[j + 1])]);
      reference_nll.push_back(nll);
      log_ratio.push_back(std::log(static_cast<double>(kVocab)) - nll);
      // The uniform model's argmax is token 0 (the first of equal logits).
      same_top += std::max_element(p.begin(), p.end()) == p.begin();
    }
  }
  const auto mean = [](const std::vector<double>& x) {
    double s = 0;
    for (double v : x) s += v;
    return s / static_cast<double>(x.size());
  };
  const ReferenceComparison& c = *r->against_reference;
  ASSERT_EQ(static_cast<int64_t>(kl.size()), r->scored_tokens);
  EXPECT_NEAR(c.mean_kl_divergence, mean(kl), 1e-9);
  EXPECT_GT(c.mean_kl_divergence, 0.1);  // the reference is far from uniform
  EXPECT_NEAR(c.max_kl_divergence, *std::max_element(kl.begin(), kl.end()), 1e-9);
  EXPECT_LE(c.median_kl_divergence, c.p99_kl_divergence);
  EXPECT_LE(c.p99_kl_divergence, c.max_kl_divergence);
  EXPECT_NEAR(std::log(c.ppl_ratio), mean(log_ratio), 1e-9);
  EXPECT_NEAR(std::log(c.reference_ppl), mean(reference_nll), 1e-9);
  EXPECT_NEAR(c.ppl_ratio, r->ppl / c.reference_ppl, 1e-9);
  EXPECT_GT(c.kl_divergence_uncertainty, 0.0);
  EXPECT_DOUBLE_EQ(c.same_top_token, static_cast<double>(same_top) / static_cast<double>(kl.size()));
}

TEST(Perplexity, RefusesAReferenceWithAnotherVocabulary) {
  const auto tokenizer = testing::byte_tokenizer();
  const WindowScorer wider = [](std::span<const int32_t> tokens) -> Result<std::vector<float>> {
    return std::vector<float>(tokens.size() * (kVocab + 1), 0.0f);
  };
  auto r = compute_perplexity(tokenizer, 1024, kVocab, uniform_scorer(), sample_text(), 16, 0, {}, wider);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("reference scorer"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace tessera
