// compute_perplexity against plain scorers over a byte vocabulary: the
// perplexity of known distributions, and every figure of the comparison with
// a reference model recomputed here in the obvious way, one position at a time.
#include "engine/perplexity.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/fakes_testing.hpp"

namespace tessera {
namespace {

constexpr int64_t kVocab = 257;  // byte_tokenizer: 256 bytes and an end token
constexpr int64_t kCtx = 32;     // 15 windows of sample_text(), 15 scored positions each

std::string sample_text() {
  std::string text;
  for (int i = 0; i < 480; ++i) text += static_cast<char>('a' + (i * 7) % 26);
  return text;
}

// Logits that depend on the position and the token there: a different,
// peaked distribution at every position; `phase` moves the peaks.
std::vector<float> varied_logits(std::span<const int32_t> tokens, float sharpness, double phase) {
  std::vector<float> logits(tokens.size() * kVocab);
  for (size_t j = 0; j < tokens.size(); ++j)
    for (int64_t v = 0; v < kVocab; ++v)
      logits[j * kVocab + static_cast<size_t>(v)] =
          sharpness * static_cast<float>(std::sin(0.37 * static_cast<double>(v) * static_cast<double>(j + 1) +
                                                  0.11 * tokens[j] + phase * static_cast<double>(v)));
  return logits;
}

WindowScorer uniform_scorer() {
  return [](std::span<const int32_t> tokens) -> Result<std::vector<float>> {
    return std::vector<float>(tokens.size() * kVocab, 0.0f);
  };
}

WindowScorer varied_scorer(float sharpness, double phase = 0) {
  return [sharpness, phase](std::span<const int32_t> tokens) -> Result<std::vector<float>> {
    return varied_logits(tokens, sharpness, phase);
  };
}

WindowModel model_of(const tok::Tokenizer& tokenizer, WindowScorer score, int64_t context = 1024) {
  return {tokenizer, context, kVocab, std::move(score)};
}

double mean_of(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += v;
  return s / static_cast<double>(x.size());
}

// The standard error of the mean, from the deviations.
double standard_error_of(const std::vector<double>& x) {
  const double m = mean_of(x);
  double ss = 0;
  for (double v : x) ss += (v - m) * (v - m);
  return std::sqrt(ss / static_cast<double>(x.size() - 1) / static_cast<double>(x.size()));
}

std::vector<double> log_softmax(const float* row) {
  std::vector<double> out(row, row + kVocab);
  double z = 0;
  for (double v : out) z += std::exp(v);
  for (double& v : out) v -= std::log(z);
  return out;
}

// Every figure of the comparison, recomputed position by position.
void expect_comparison_matches(const WindowScorer& model, const WindowScorer& reference) {
  const auto tokenizer = testing::byte_tokenizer();
  const std::string text = sample_text();
  const WindowModel reference_model = model_of(tokenizer, reference);
  auto r = compute_perplexity(model_of(tokenizer, model), text, kCtx, 0, {}, &reference_model);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->against_reference.has_value());

  const std::vector<int32_t> tokens = tokenizer.encode(text, std::nullopt, false);
  std::vector<double> nll, reference_nll, difference, kl, entropy, reference_entropy, entropy_difference;
  int64_t same_top = 0;
  for (int64_t w = 0; w < r->windows; ++w) {
    const std::span<const int32_t> window(tokens.data() + w * kCtx, static_cast<size_t>(kCtx));
    const std::vector<float> q_logits = *model(window), p_logits = *reference(window);
    for (int64_t j = kCtx / 2; j < kCtx - 1; ++j) {
      const std::vector<double> log_q = log_softmax(q_logits.data() + j * kVocab);
      const std::vector<double> log_p = log_softmax(p_logits.data() + j * kVocab);
      double divergence = 0;
      double h_q = 0, h_p = 0;
      for (int64_t v = 0; v < kVocab; ++v) {
        divergence += std::exp(log_p[v]) * (log_p[v] - log_q[v]);
        h_q -= std::exp(log_q[v]) * log_q[v];
        h_p -= std::exp(log_p[v]) * log_p[v];
      }
      entropy.push_back(h_q);
      reference_entropy.push_back(h_p);
      entropy_difference.push_back(h_q - h_p);
      const auto target = static_cast<size_t>(window[j + 1]);
      nll.push_back(-log_q[target]);
      reference_nll.push_back(-log_p[target]);
      difference.push_back(nll.back() - reference_nll.back());
      kl.push_back(divergence);
      same_top += std::max_element(log_q.begin(), log_q.end()) - log_q.begin() ==
                  std::max_element(log_p.begin(), log_p.end()) - log_p.begin();
    }
  }
  ASSERT_EQ(static_cast<int64_t>(kl.size()), r->scored_tokens);
  ASSERT_GE(kl.size(), 200u);  // enough for the 99th percentile to lie between two values
  std::vector<double> sorted = kl;
  std::sort(sorted.begin(), sorted.end());
  const double rank99 = 0.99 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(rank99);
  const double p99 = sorted[lo] + (sorted[lo + 1] - sorted[lo]) * (rank99 - static_cast<double>(lo));
  const double median =
      sorted.size() % 2 ? sorted[sorted.size() / 2] : 0.5 * (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]);

  const ReferenceComparison& c = *r->against_reference;
  EXPECT_NEAR(std::log(r->ppl), mean_of(nll), 1e-9);
  EXPECT_NEAR(r->ppl_uncertainty / r->ppl, standard_error_of(nll), 1e-9);
  EXPECT_NEAR(std::log(c.reference_ppl), mean_of(reference_nll), 1e-9);
  EXPECT_NEAR(c.reference_ppl_uncertainty / c.reference_ppl, standard_error_of(reference_nll), 1e-9);
  EXPECT_NEAR(c.mean_kl_divergence, mean_of(kl), 1e-9);
  EXPECT_NEAR(c.kl_divergence_uncertainty, standard_error_of(kl), 1e-9);
  EXPECT_NEAR(c.median_kl_divergence, median, 1e-9);
  EXPECT_NEAR(c.p99_kl_divergence, p99, 1e-9);
  EXPECT_NEAR(c.max_kl_divergence, sorted.back(), 1e-9);
  // Paired: the error of the mean difference, far below either model's own.
  EXPECT_NEAR(std::log(c.ppl_ratio), mean_of(difference), 1e-9);
  EXPECT_NEAR(c.ppl_ratio_uncertainty / c.ppl_ratio, standard_error_of(difference), 1e-9);
  EXPECT_DOUBLE_EQ(c.same_top_token, static_cast<double>(same_top) / static_cast<double>(kl.size()));
  EXPECT_NEAR(c.mean_entropy, mean_of(entropy), 1e-9);
  EXPECT_NEAR(c.reference_mean_entropy, mean_of(reference_entropy), 1e-9);
  EXPECT_NEAR(c.entropy_difference_uncertainty, standard_error_of(entropy_difference), 1e-9);
}

TEST(Perplexity, OfAUniformModelIsTheVocabularySize) {
  const auto tokenizer = testing::byte_tokenizer();
  auto r = compute_perplexity(model_of(tokenizer, uniform_scorer()), sample_text(), 16);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->windows, 30);
  EXPECT_EQ(r->scored_tokens, 30 * 7);
  EXPECT_NEAR(r->ppl, static_cast<double>(kVocab), 1e-9);
  EXPECT_NEAR(r->ppl_uncertainty, 0.0, 1e-9);
  EXPECT_FALSE(r->against_reference.has_value());
}

TEST(Perplexity, AgainstItselfAModelHasNoDivergence) {
  const auto tokenizer = testing::byte_tokenizer();
  const WindowModel reference = model_of(tokenizer, varied_scorer(3));
  auto r = compute_perplexity(model_of(tokenizer, varied_scorer(3)), sample_text(), kCtx, 0, {}, &reference);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->against_reference.has_value());
  const ReferenceComparison& c = *r->against_reference;
  EXPECT_NEAR(c.reference_ppl, r->ppl, 1e-12);
  EXPECT_NEAR(c.mean_kl_divergence, 0.0, 1e-12);
  EXPECT_NEAR(c.max_kl_divergence, 0.0, 1e-12);
  EXPECT_NEAR(c.ppl_ratio, 1.0, 1e-12);
  EXPECT_NEAR(c.ppl_ratio_uncertainty, 0.0, 1e-12);
  EXPECT_EQ(c.same_top_token, 1.0);
  EXPECT_EQ(c.mean_entropy, c.reference_mean_entropy);
}

// A uniform model against a peaked reference: far apart, the top tokens
// agreeing only where the reference's peak is token 0.
TEST(Perplexity, AgainstAReferenceMatchesTheDefinitionsFarApart) {
  expect_comparison_matches(uniform_scorer(), varied_scorer(4));
}

// Two peaked models whose peaks move apart a little: close, the top tokens
// agreeing at some positions and not at others.
TEST(Perplexity, AgainstAReferenceMatchesTheDefinitionsNearby) {
  expect_comparison_matches(varied_scorer(4, 0.002), varied_scorer(4));
  const auto tokenizer = testing::byte_tokenizer();
  const WindowModel reference = model_of(tokenizer, varied_scorer(4));
  auto r = compute_perplexity(model_of(tokenizer, varied_scorer(4, 0.002)), sample_text(), kCtx, 0, {}, &reference);
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->against_reference->same_top_token, 0.0);
  EXPECT_LT(r->against_reference->same_top_token, 1.0);
}

// A reference whose -inf logits rule tokens out (as a vocabulary-subset head
// does): those tokens add nothing to the divergence, which stays finite.
TEST(Perplexity, TokensTheReferenceRulesOutAddNothing) {
  const WindowScorer masked = [](std::span<const int32_t> tokens) -> Result<std::vector<float>> {
    std::vector<float> logits = varied_logits(tokens, 4, 0);
    for (size_t j = 0; j < tokens.size(); ++j)
      for (int64_t v = 200; v < kVocab; ++v) logits[j * kVocab + static_cast<size_t>(v)] = -INFINITY;
    return logits;
  };
  const auto tokenizer = testing::byte_tokenizer();
  const WindowModel reference = model_of(tokenizer, masked);
  auto r = compute_perplexity(model_of(tokenizer, varied_scorer(4)), sample_text(), kCtx, 0, {}, &reference);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(std::isfinite(r->against_reference->mean_kl_divergence));
  EXPECT_GT(r->against_reference->mean_kl_divergence, 0.0);
  EXPECT_TRUE(std::isfinite(r->against_reference->reference_mean_entropy));
}

TEST(Perplexity, RefusesAReferenceThatDoesNotFit) {
  const auto tokenizer = testing::byte_tokenizer();
  const std::string text = sample_text();
  const auto refused = [&](const WindowModel& reference) {
    auto r = compute_perplexity(model_of(tokenizer, uniform_scorer()), text, kCtx, 0, {}, &reference);
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(refused({tokenizer, 1024, kVocab + 1, uniform_scorer()}).find("reference model's vocabulary has 258"),
            std::string::npos);
  EXPECT_NE(refused(model_of(tokenizer, uniform_scorer(), 16)).find("exceeds the reference model's context of 16"),
            std::string::npos);
  // A tokenizer that puts BOS first: the windows would differ.
  const auto with_bos = testing::byte_tokenizer(/*bos_first=*/true);
  EXPECT_NE(refused(model_of(with_bos, uniform_scorer())).find("tokenizes the text differently"), std::string::npos);
  // A scorer that gives rows of another width.
  const WindowScorer wider = [](std::span<const int32_t> tokens) -> Result<std::vector<float>> {
    return std::vector<float>(tokens.size() * (kVocab + 1), 0.0f);
  };
  EXPECT_NE(refused(model_of(tokenizer, wider)).find("reference scorer gave"), std::string::npos);
}

}  // namespace
}  // namespace tessera
