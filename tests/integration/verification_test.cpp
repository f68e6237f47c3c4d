// Draft tokens verified in the scheduler, on the real model: whatever a
// proposer drafts (right, wrong, or right then wrong), greedy ids are the
// target's own, batched or alone; and a pipeline mixing plugin libraries of
// ABI minors 0 and 1 runs.
#include <map>

#include "engine/scheduler.hpp"
#include "model_fixture.hpp"

namespace tessera::test {
namespace {

using Overrides = std::vector<PipelineOverride>;

const std::vector<std::string> kVerificationPrompts = {
    "What is the capital of France?",
    "Write a haiku about memory bandwidth.",
    "List three fruits.",
};

// Drafts from a known continuation of each prompt: exactly it, or with every
// `spoil`-th drafted token replaced by a wrong one.
class KnownContinuation final : public DraftProposer {
 public:
  KnownContinuation(std::map<size_t, std::vector<int32_t>> prompts_to_ids, int spoil)
      : known_(std::move(prompts_to_ids)), spoil_(spoil) {}
  Status propose(Request& r, int32_t max_tokens, std::vector<int32_t>& out, std::vector<float>& /*probs*/) override {
    const auto& ids = known_.at(r.index);
    const size_t done = static_cast<size_t>(r.outcome.result.metrics.generated_tokens);
    for (int32_t i = 0; i < max_tokens && done + static_cast<size_t>(i) < ids.size(); ++i) {
      int32_t token = ids[done + static_cast<size_t>(i)];
      if (spoil_ > 0 && ++drafted_ % spoil_ == 0) token = (token + 1) % 1000;
      out.push_back(token);
    }
    return Status::Ok();
  }

 private:
  std::map<size_t, std::vector<int32_t>> known_;
  int spoil_;
  int64_t drafted_ = 0;
};

std::vector<std::vector<int32_t>> generate(Session& s, DraftProposer* proposer, SchedulerStats* stats) {
  SchedulerConfig config;
  config.max_draft_tokens = 4;
  Scheduler scheduler(s, config, proposer);
  for (const auto& p : kVerificationPrompts) scheduler.submit(greedy(p, 32));
  auto out = scheduler.run();
  EXPECT_TRUE(out.ok()) << out.status().message();
  std::vector<std::vector<int32_t>> ids;
  if (!out.ok()) return ids;
  for (const auto& o : *out) {
    EXPECT_TRUE(o.status.ok()) << o.status.message();
    ids.push_back(o.result.metrics.token_ids);
  }
  if (stats) *stats = scheduler.stats();
  return ids;
}

void expect_drafts_change_nothing(Session& session) {
  const auto plain = generate(session, nullptr, nullptr);
  ASSERT_EQ(plain.size(), kVerificationPrompts.size());
  std::map<size_t, std::vector<int32_t>> known;
  for (size_t i = 0; i < plain.size(); ++i) known[i] = plain[i];
  for (int spoil : {0, 3, 1}) {
    KnownContinuation proposer(known, spoil);
    SchedulerStats stats;
    const auto drafted = generate(session, &proposer, &stats);
    EXPECT_EQ(drafted, plain) << "every " << spoil << "th draft token wrong";
    EXPECT_GT(stats.speculation.drafted_tokens, 0);
    if (spoil == 0) {
      EXPECT_EQ(stats.speculation.accepted_tokens, stats.speculation.drafted_tokens) << "right drafts are all accepted";
      EXPECT_LT(stats.steps, 3 * 32 / 2) << "and take fewer steps";
    }
    if (spoil == 1) {
      EXPECT_EQ(stats.speculation.accepted_tokens, 0) << "wrong drafts never are";
    }
  }
}

TEST(Verification, GreedyIdsAreTheTargetsWhateverTheDraftOnAContiguousCache) {
  TESSERA_OPEN_OR_SKIP(session, (Overrides{{"kvcache", "max_sequences", "3"}, {"run", "context", "256"}}));
  expect_drafts_change_nothing(*session);
}

TEST(Verification, GreedyIdsAreTheTargetsWhateverTheDraftOnAPagedCache) {
  TESSERA_OPEN_OR_SKIP(session, (Overrides{{"kvcache", "plugin", "paged"},
                                           {"kvcache", "memory", "\"32MiB\""},
                                           {"attention", "plugin", "paged"},
                                           {"run", "context", "256"}}));
  expect_drafts_change_nothing(*session);
}

TEST(Verification, APipelineMixingAbiMinorsRuns) {
  // fixture_minor_0 was built for ABI 3.0: no distribution() in its vtable.
  // Every other plugin of this pipeline is built for the SDK's minor.
  TESSERA_OPEN_OR_SKIP(session, (Overrides{{"decoding", "plugin", "fixture_minor_0"}}));
  const auto ids = generate(*session, nullptr, nullptr);
  ASSERT_EQ(ids.size(), kVerificationPrompts.size());
  for (const auto& i : ids) EXPECT_EQ(i, std::vector<int32_t>(32, 5)) << "its step() always picks 5";
  std::map<size_t, std::vector<int32_t>> fives;
  for (size_t i = 0; i < kVerificationPrompts.size(); ++i) fives[i] = std::vector<int32_t>(32, 5);
  KnownContinuation proposer(fives, 0);
  EXPECT_EQ(generate(*session, &proposer, nullptr), ids) << "and it verifies drafts through its own step()";
}

}  // namespace
}  // namespace tessera::test
