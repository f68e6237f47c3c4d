// Verifying a draft: exact in distribution whether the draft proposes with
// certainty or from a distribution q, and safe with a strategy library built
// before distribution() existed (ABI minor 0).
#include "engine/draft_verification.hpp"

#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <random>

#include "engine/decoding_context.hpp"
#include "plugin/registry.hpp"

namespace tessera {
namespace {

constexpr size_t kVerifiedVocab = 4;
constexpr std::array<double, kVerifiedVocab> kTarget = {0.1, 0.2, 0.3, 0.4};  // p, at every row

// Samples from kTarget in step() and exposes it through distribution().
class TargetStrategy final : public DecodingStrategy {
 public:
  Status step(DecodingContext& ctx, std::vector<int32_t>& out) noexcept override {
    std::discrete_distribution<int32_t> pick(kTarget.begin(), kTarget.end());
    out.push_back(pick(ctx.rng()));
    return Status::Ok();
  }
  Status distribution(DecodingContext&, std::span<float> probs) noexcept override {
    for (size_t i = 0; i < kVerifiedVocab; ++i) probs[i] = static_cast<float>(kTarget[i]);
    return Status::Ok();
  }
};

// Chi-square of the observed counts against kTarget, 3 degrees of freedom.
double chi_square(const std::array<int, kVerifiedVocab>& counts, int n) {
  double chi = 0;
  for (size_t i = 0; i < kVerifiedVocab; ++i) {
    const double expected = kTarget[i] * n;
    chi += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  return chi;
}
// P(chi-square with 3 degrees of freedom > 16.27) = 0.001: a correct
// implementation fails this with fixed seeds never, a wrong one (e.g. emitting
// q) always, since q is far from p.
constexpr double kChiSquare3At0001 = 16.27;

// The first token a verification emits, over many trials with the draft
// proposing two tokens drawn from q (passed on, or not).
std::array<int, kVerifiedVocab> first_tokens(bool pass_q, int trials) {
  const std::array<float, kVerifiedVocab> q = {0.6f, 0.25f, 0.1f, 0.05f};
  std::vector<float> draft_probs;
  for (int row = 0; row < 2; ++row) draft_probs.insert(draft_probs.end(), q.begin(), q.end());
  std::vector<float> logits(3 * kVerifiedVocab, 0.0f);  // unused by TargetStrategy
  std::mt19937_64 drafter(7);
  std::discrete_distribution<int32_t> from_q(q.begin(), q.end());
  TargetStrategy strategy;
  std::array<int, kVerifiedVocab> counts{};
  for (int t = 0; t < trials; ++t) {
    SamplingSettings s;
    s.seed = static_cast<uint64_t>(t);
    RequestDecodingContext ctx(std::vector<int32_t>{1, 2}, s);
    const std::vector<int32_t> draft = {from_q(drafter), from_q(drafter)};
    ctx.propose(draft);
    ctx.set_logits(logits);
    std::vector<int32_t> out;
    EXPECT_TRUE(verify_draft(strategy, ctx, pass_q ? std::span<const float>(draft_probs) : std::span<const float>{}, out)
                    .ok());
    EXPECT_GE(out.size(), 1u);
    EXPECT_LE(out.size(), 3u);
    ++counts[static_cast<size_t>(out.front())];
  }
  return counts;
}

TEST(VerifyDraft, RejectionSamplingEmitsTheTargetsDistribution) {
  constexpr int kTrials = 20000;
  const auto counts = first_tokens(/*pass_q=*/true, kTrials);
  EXPECT_LT(chi_square(counts, kTrials), kChiSquare3At0001)
      << counts[0] << " " << counts[1] << " " << counts[2] << " " << counts[3];
}

TEST(VerifyDraft, VerifyingAsCertainIsExactToo) {
  // The draft drew from q but the strategy verifies as if it were certain
  // (step() and compare): still the target's distribution, fewer tokens kept.
  constexpr int kTrials = 20000;
  const auto counts = first_tokens(/*pass_q=*/false, kTrials);
  EXPECT_LT(chi_square(counts, kTrials), kChiSquare3At0001)
      << counts[0] << " " << counts[1] << " " << counts[2] << " " << counts[3];
}

TEST(VerifyDraft, TheCheckCanFail) {
  // Guards the two tests above: emitting the draft's own tokens (q) is far from p.
  std::array<int, kVerifiedVocab> q_counts = {12000, 5000, 2000, 1000};
  EXPECT_GT(chi_square(q_counts, 20000), 1000.0);
}

// fixture_minor.cpp, built for ABI minor 0 and for the SDK's: step() picks
// 5, distribution() (minor 1 only) is a point mass on 3.
std::shared_ptr<DecodingStrategy> fixture(PluginRegistry& registry, const char* folder, const char* name) {
  const auto dir = std::filesystem::path(TESSERA_FIXTURE_DIR) / folder;
  EXPECT_TRUE(registry.add_file(dir / ("lib" + std::string(name) + ".so")).ok());
  const LoadedPlugin* p = registry.find(PluginFamily::decoding, name);
  if (p == nullptr) return nullptr;
  auto made = registry.create<DecodingStrategy>(*p, ParamValues{});
  return made.ok() ? *made : nullptr;
}

TEST(VerifyDraft, AStrategyOfMinorZeroIsNeverAskedForItsDistribution) {
  PluginRegistry registry;
  auto old_one = fixture(registry, "minor0", "fixture_minor_0");
  auto new_one = fixture(registry, "minor_sdk", "fixture_minor_sdk");
  ASSERT_NE(old_one, nullptr);
  ASSERT_NE(new_one, nullptr);
  std::vector<float> logits(3 * 8, 0.0f);
  std::vector<float> q(2 * 8, 0.0f);
  q[3] = q[8 + 3] = 1.0f;  // the draft proposed 3, 3 with certainty
  auto verify = [&](DecodingStrategy& strategy) {
    RequestDecodingContext ctx(std::vector<int32_t>{1}, SamplingSettings{});
    ctx.propose(std::vector<int32_t>{3, 3});
    ctx.set_logits(logits);
    std::vector<int32_t> out;
    EXPECT_TRUE(verify_draft(strategy, ctx, q, out).ok());
    return out;
  };
  // Minor 0 (no distribution() in its vtable): verified through step(), which says 5.
  EXPECT_EQ(verify(*old_one), (std::vector<int32_t>{5}));
  // Minor 1: rejection sampling with its distribution, a point mass on 3.
  EXPECT_EQ(verify(*new_one), (std::vector<int32_t>{3, 3, 3}));
}

}  // namespace
}  // namespace tessera
