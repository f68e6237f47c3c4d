// The "schedule" part of a step on its own: decoders before prompt chunks,
// the token budget, admission by the memory, preemption, drafts to verify.
#include "engine/step_planner.hpp"

#include <gtest/gtest.h>

#include <deque>

#include "engine/fakes_testing.hpp"
#include "tessera/architecture.hpp"

namespace tessera {
namespace {

using testing::FakeMemory;
using testing::make_request;

class StepPlannerTest : public ::testing::Test {
 protected:
  Request& add(std::vector<int32_t> prompt, int64_t max_tokens = 8) {
    table_.all.push_back(make_request(table_.all.size(), std::move(prompt), max_tokens, tokenizer_));
    table_.waiting.push_back(table_.all.back().get());
    return *table_.all.back();
  }
  const ScheduledRequest* item(const StepPlan& plan, const Request& r) {
    for (const auto& i : plan.items)
      if (i.request == &r) return &i;
    return nullptr;
  }

  tok::Tokenizer tokenizer_ = testing::byte_tokenizer();
  RequestTable table_;
};

TEST_F(StepPlannerTest, DecodersFirstThenPromptChunksWithinTheBudget) {
  FakeMemory memory(4, 100, 1000);
  SchedulerConfig config;
  config.max_batch_tokens = 8;
  StepPlanner planner(memory, 1000, config, nullptr, true);
  Request& a = add({1, 2, 3, 4, 5, 6});
  Request& b = add({7, 8, 9, 10, 11});

  auto first = planner.plan(table_);
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_EQ(first->items.size(), 2u);
  EXPECT_EQ(item(*first, a)->n_tokens, 6);
  EXPECT_EQ(item(*first, a)->n_logits, 1) << "the prompt's end: its logits are wanted";
  EXPECT_EQ(item(*first, b)->n_tokens, 2) << "what the budget leaves";
  EXPECT_EQ(item(*first, b)->n_logits, 0) << "a chunk short of the prompt's end wants no logits";
  EXPECT_FALSE(first->decode_only);
  EXPECT_EQ(memory.length(a.seq), 6) << "slots reserved";

  // As the output processor would: a's prompt is in, and it has a new token.
  a.n_computed = 6;
  a.ctx->push(42);
  b.n_computed = 2;
  auto second = planner.plan(table_);
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->items.size(), 2u);
  EXPECT_EQ(second->items[0].request, &a) << "decoders come first";
  EXPECT_EQ(second->items[0].n_tokens, 1);
  EXPECT_EQ(item(*second, b)->n_tokens, 3);
  EXPECT_EQ(item(*second, b)->n_logits, 1);
}

// A memory keeping prefixes only where steps end (recurrent state
// snapshots every 4 tokens): prompt chunks end on multiples of 4.
TEST_F(StepPlannerTest, PromptChunksEndOnTheMemorysPrefixGranularity) {
  FakeMemory memory(4, 100, 1000, /*recurrent=*/true);
  memory.granularity = 4;
  SchedulerConfig config;
  config.max_batch_tokens = 9;
  StepPlanner planner(memory, 1000, config, nullptr, false);
  Request& a = add({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  std::vector<int32_t> chunks;
  while (a.n_computed < 11) {
    auto plan = planner.plan(table_);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    ASSERT_EQ(plan->items.size(), 1u);
    chunks.push_back(plan->items[0].n_tokens);
    a.n_computed += plan->items[0].n_tokens;
  }
  // The budget's 9 would pass 4 and 8: cut at the first, 4; then 4..8; then
  // the prompt's last 3 tokens (no multiple of 4 inside 8..11).
  EXPECT_EQ(chunks, (std::vector<int32_t>{4, 4, 3}));
}

// Prompt chunks short of the prompt's end end on multiples of
// kPromptSplitAlignment (64) where the budget reaches one, whatever the memory.
TEST_F(StepPlannerTest, PromptChunksEndOnMultiplesOfTheSplitAlignment) {
  const auto chunks_of = [&](int32_t budget) {
    FakeMemory memory(4, 1000, 1000);
    SchedulerConfig config;
    config.max_batch_tokens = budget;
    StepPlanner planner(memory, 1000, config, nullptr, true);
    table_ = RequestTable{};
    Request& a = add(std::vector<int32_t>(300, 7));
    std::vector<int32_t> chunks;
    while (a.n_computed < 300) {
      auto plan = planner.plan(table_);
      EXPECT_TRUE(plan.ok()) << plan.status().message();
      if (!plan.ok() || plan->items.size() != 1u) break;
      chunks.push_back(plan->items[0].n_tokens);
      a.n_computed += plan->items[0].n_tokens;
    }
    return chunks;
  };
  static_assert(kPromptSplitAlignment == 64, "the expected chunks below assume 64");
  // 150 a step: cut back to 128 (0..128), 128 (..256), then the last 44.
  EXPECT_EQ(chunks_of(150), (std::vector<int32_t>{128, 128, 44}));
  // A budget below the alignment: its own size where it reaches no multiple,
  // else up to the multiple it reaches (50, then 50..64, ...).
  EXPECT_EQ(chunks_of(50), (std::vector<int32_t>{50, 14, 50, 14, 50, 14, 50, 14, 44}));
  // 100 a step: 64, then 64..128, ... each cut back to the next multiple it passes.
  EXPECT_EQ(chunks_of(100), (std::vector<int32_t>{64, 64, 64, 64, 44}));
}

// A second prompt whose share of the budget reaches no multiple of 64 waits
// for a step with more room, rather than start a piece off the multiples.
TEST_F(StepPlannerTest, APromptPieceThatReachesNoMultipleWaitsForRoom) {
  FakeMemory memory(4, 1000, 1000);
  SchedulerConfig config;
  config.max_batch_tokens = 90;
  StepPlanner planner(memory, 1000, config, nullptr, true);
  Request& a = add(std::vector<int32_t>(100, 7));
  Request& b = add(std::vector<int32_t>(100, 8));
  auto first = planner.plan(table_);
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_EQ(first->items.size(), 1u) << "b's 26 tokens of budget reach no multiple of 64";
  EXPECT_EQ(item(*first, a)->n_tokens, 64);
  EXPECT_EQ(item(*first, b), nullptr);
  a.n_computed = 64;
  auto second = planner.plan(table_);
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->items.size(), 1u) << "a's last 36 leave b 54: still no multiple";
  EXPECT_EQ(item(*second, a)->n_tokens, 36);
  a.n_computed = 100;
  a.ctx->push(42);
  auto third = planner.plan(table_);
  ASSERT_TRUE(third.ok());
  ASSERT_EQ(third->items.size(), 2u);
  EXPECT_EQ(item(*third, a)->n_tokens, 1) << "a decodes";
  EXPECT_EQ(item(*third, b)->n_tokens, 64) << "89 tokens of budget, cut back to 64";
}

TEST_F(StepPlannerTest, AdmitsWhileTheMemoryHoldsWhatRunningRequestsMayGrowTo) {
  FakeMemory memory(4, 6, 1000);  // 24 tokens in all
  SchedulerConfig config;
  StepPlanner planner(memory, 1000, config, nullptr, true);
  Request& a = add({1, 2, 3, 4}, 8);  // may grow to 12 tokens: 3 blocks
  Request& b = add({5, 6, 7, 8}, 8);  // 3 more: 6 blocks, the whole pool
  Request& c = add({9}, 1);           // 1 block: must wait
  auto plan = planner.plan(table_);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(a.has_seq && b.has_seq);
  EXPECT_FALSE(c.has_seq) << "c would not fit with a and b at their full length";
  ASSERT_EQ(table_.waiting.size(), 1u);
  EXPECT_EQ(table_.waiting.front(), &c);
  EXPECT_EQ(planner.stats().max_running, 2);
}

TEST_F(StepPlannerTest, WithoutReservationsAFullPoolPreemptsTheLatestRequest) {
  FakeMemory memory(4, 3, 1000);  // 12 tokens
  SchedulerConfig config;
  config.reserve_max_tokens = false;
  StepPlanner planner(memory, 1000, config, nullptr, true);
  Request& a = add({1, 2, 3, 4, 5}, 50);  // 2 blocks
  Request& b = add({6, 7, 8}, 50);        // 1 block
  ASSERT_TRUE(planner.plan(table_).ok());
  ASSERT_TRUE(a.has_seq && b.has_seq);
  a.n_computed = 5;
  for (int32_t t : {1, 2, 3, 4}) a.ctx->push(t);  // 9 tokens: a needs a third block; b holds the last one
  b.n_computed = 3;
  b.ctx->push(9);
  auto plan = planner.plan(table_);
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(b.has_seq) << "the most recently admitted gives way";
  EXPECT_EQ(b.n_computed, 0) << "recomputed from scratch when re-admitted";
  EXPECT_EQ(b.outcome.preemptions, 1);
  ASSERT_EQ(table_.waiting.front(), &b);
  ASSERT_EQ(plan->items.size(), 1u);
  EXPECT_EQ(plan->items[0].request, &a);
  EXPECT_EQ(planner.stats().preemptions, 1);
}

TEST_F(StepPlannerTest, ARequestAloneThatCannotFitFails) {
  FakeMemory memory(4, 1, 1000);  // 4 tokens
  SchedulerConfig config;
  config.reserve_max_tokens = false;
  StepPlanner planner(memory, 1000, config, nullptr, true);
  add({1, 2, 3, 4, 5, 6});
  auto plan = planner.plan(table_);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->failed.size(), 1u);
  EXPECT_EQ(plan->failed[0].second.code(), StatusCode::out_of_memory);
  EXPECT_TRUE(plan->items.empty());
}

// Proposes the next `k` tokens of a fixed continuation.
class ScriptProposer final : public DraftProposer {
 public:
  explicit ScriptProposer(std::vector<int32_t> script) : script_(std::move(script)) {}
  Status propose(Request&, int32_t max_tokens, std::vector<int32_t>& out, std::vector<float>& /*probs*/) override {
    ++calls;
    last_max = max_tokens;
    for (int32_t i = 0; i < max_tokens && i < static_cast<int32_t>(script_.size()); ++i) out.push_back(script_[i]);
    return Status::Ok();
  }
  int calls = 0;
  int32_t last_max = -1;

 private:
  std::vector<int32_t> script_;
};

TEST_F(StepPlannerTest, ADecodingRequestVerifiesItsDraftInTheSameStep) {
  FakeMemory memory(4, 100, 1000);
  SchedulerConfig config;
  config.max_draft_tokens = 3;
  ScriptProposer proposer({70, 71, 72, 73, 74});
  StepPlanner planner(memory, 1000, config, &proposer, true);
  Request& a = add({1, 2, 3}, 10);
  ASSERT_TRUE(planner.plan(table_).ok());  // the prompt: no drafts while prefilling
  EXPECT_EQ(proposer.calls, 0);
  a.n_computed = 3;
  a.ctx->push(9);
  auto plan = planner.plan(table_);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->items.size(), 1u);
  EXPECT_EQ(plan->items[0].n_tokens, 4) << "the last token and three drafts";
  EXPECT_EQ(plan->items[0].n_logits, 4) << "a row to verify each draft, and one more";
  EXPECT_EQ(plan->items[0].n_proposed, 3);
  EXPECT_EQ(std::vector<int32_t>(a.ctx->proposed().begin(), a.ctx->proposed().end()),
            (std::vector<int32_t>{70, 71, 72}));
  EXPECT_EQ(memory.length(a.seq), 3 + 4);
  EXPECT_EQ(memory.checkpoints_taken, 0) << "a memory that truncates needs no checkpoint";
}

TEST_F(StepPlannerTest, DraftsStayWithinMaxTokensTheBudgetAndTheContext) {
  FakeMemory memory(4, 100, 1000);
  SchedulerConfig config;
  config.max_draft_tokens = 8;
  ScriptProposer proposer(std::vector<int32_t>(20, 5));
  {
    StepPlanner planner(memory, 1000, config, &proposer, true);
    Request& a = add({1, 2, 3}, 3);  // one generated below, two to go: one draft and the own token
    ASSERT_TRUE(planner.plan(table_).ok());
    a.n_computed = 3;
    a.ctx->push(9);
    a.outcome.result.metrics.generated_tokens = 1;
    auto plan = planner.plan(table_);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(proposer.last_max, 1);
    EXPECT_EQ(plan->items[0].n_proposed, 1);
  }
  table_ = {};
  {
    StepPlanner planner(memory, 6, config, &proposer, true);  // a context of 6
    Request& a = add({1, 2, 3}, 50);
    ASSERT_TRUE(planner.plan(table_).ok());
    a.n_computed = 3;
    a.ctx->push(9);  // 4 tokens: positions up to 5 are left for two drafts
    auto plan = planner.plan(table_);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(plan->items[0].n_proposed, 2);
  }
}

TEST_F(StepPlannerTest, AMemoryThatCannotTruncateIsCheckpointedBeforeDrafts) {
  FakeMemory memory(4, 100, 1000, /*recurrent=*/true);
  SchedulerConfig config;
  config.max_draft_tokens = 2;
  ScriptProposer proposer({70, 71});
  StepPlanner planner(memory, 1000, config, &proposer, false);
  Request& a = add({1, 2, 3}, 10);
  ASSERT_TRUE(planner.plan(table_).ok());
  a.n_computed = 3;
  a.ctx->push(9);
  ASSERT_TRUE(planner.plan(table_).ok());
  EXPECT_EQ(memory.checkpoints_taken, 1);
  EXPECT_TRUE(a.checkpoint.has_value());
}

}  // namespace
}  // namespace tessera
