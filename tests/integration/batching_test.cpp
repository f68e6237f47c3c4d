// Continuous batching: every request's greedy output under batching, chunked
// prefill, paging, preemption and prefix caching equals running it alone.
#include <algorithm>
#include <map>

#include "engine/scheduler.hpp"
#include "model_fixture.hpp"

namespace tessera::test {
namespace {

using Overrides = std::vector<PipelineOverride>;

const std::vector<std::string> kPrompts = {
    "What is the capital of France?",
    "Write a haiku about memory bandwidth.",
    "List three fruits.",
    "Explain what a transformer neural network is in two sentences.",
    "Why is the sky blue?",
};

std::vector<std::vector<int32_t>> run_alone(Session& s, int64_t max_tokens) {
  std::vector<std::vector<int32_t>> out;
  for (const auto& p : kPrompts) {
    auto r = s.generate(greedy(p, max_tokens));
    EXPECT_TRUE(r.ok()) << r.status().message();
    out.push_back(r.ok() ? r->metrics.token_ids : std::vector<int32_t>{});
  }
  return out;
}

std::vector<RequestOutcome> run_batched(Session& s, int64_t max_tokens, SchedulerConfig config,
                                        SchedulerStats* stats = nullptr) {
  Scheduler scheduler(s, config);
  for (const auto& p : kPrompts) scheduler.submit(greedy(p, max_tokens));
  auto out = scheduler.run();
  EXPECT_TRUE(out.ok()) << out.status().message();
  if (stats) *stats = scheduler.stats();
  return out.ok() ? *out : std::vector<RequestOutcome>{};
}

void expect_same(const std::vector<std::vector<int32_t>>& alone, const std::vector<RequestOutcome>& batched) {
  ASSERT_EQ(alone.size(), batched.size());
  for (size_t i = 0; i < alone.size(); ++i) {
    ASSERT_TRUE(batched[i].status.ok()) << batched[i].status.message();
    EXPECT_EQ(batched[i].result.metrics.token_ids, alone[i]) << "request " << i;
  }
}

TEST(Batching, ContiguousBatchEqualsAlone) {
  TESSERA_OPEN_OR_SKIP(session, (Overrides{{"kvcache", "max_sequences", "5"}, {"run", "context", "256"}}));
  const auto alone = run_alone(*session, 24);
  SchedulerStats stats;
  expect_same(alone, run_batched(*session, 24, {}, &stats));
  EXPECT_EQ(stats.max_running, 5);
  EXPECT_LT(stats.steps, 5 * 24);  // batched: fewer forward steps than tokens
  // The five prompts (~200 tokens) share the first step, which gives each its
  // first token; every later token comes from a step that only decodes.
  EXPECT_EQ(stats.decode_step_tokens, stats.generated_tokens - 5);
  EXPECT_GT(stats.decode_step_ms, 0.0);
  EXPECT_LT(stats.decode_step_ms, stats.wall_ms);
}

TEST(Batching, ChunkedPrefillEqualsAlone) {
  TESSERA_OPEN_OR_SKIP(session, (Overrides{{"kvcache", "max_sequences", "5"}, {"run", "context", "256"}}));
  const auto alone = run_alone(*session, 12);
  SchedulerConfig small;
  small.max_batch_tokens = 16;  // prompts of ~40 tokens arrive in several chunks, decoders go first
  expect_same(alone, run_batched(*session, 12, small));
}

TEST(Batching, FewerSlotsThanRequestsQueueAndStillMatch) {
  TESSERA_OPEN_OR_SKIP(session, (Overrides{{"kvcache", "max_sequences", "2"}, {"run", "context", "256"}}));
  const auto alone = run_alone(*session, 12);
  SchedulerStats stats;
  expect_same(alone, run_batched(*session, 12, {}, &stats));
  EXPECT_EQ(stats.max_running, 2);
}

TEST(Batching, ARequestThatCanNeverFitIsRejectedAloneOthersRun) {
  TESSERA_OPEN_OR_SKIP(session, (Overrides{{"kvcache", "max_sequences", "2"}, {"run", "context", "64"}}));
  Scheduler scheduler(*session);
  scheduler.submit(greedy("Hi", 8));
  std::string huge;
  for (int i = 0; i < 60; ++i) huge += "word ";
  scheduler.submit(greedy(huge, 8));
  scheduler.submit(greedy("Hello", 8));
  auto out = scheduler.run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_TRUE((*out)[0].status.ok());
  EXPECT_FALSE((*out)[1].status.ok());
  EXPECT_NE((*out)[1].status.message().find("context holds 64"), std::string::npos) << (*out)[1].status.message();
  EXPECT_TRUE((*out)[2].status.ok());
  EXPECT_GT((*out)[2].result.metrics.generated_tokens, 0);
}

// The paged cache: blocks of 16 tokens from one pool.
Overrides paged(const std::string& memory) {
  return {{"kvcache", "plugin", "paged"}, {"kvcache", "memory", "\"" + memory + "\""},
          {"kvcache", "block_size", "16"}, {"attention", "plugin", "paged"}, {"run", "context", "256"}};
}

TEST(Batching, PagedBatchEqualsAloneWithLittleWaste) {
  TESSERA_OPEN_OR_SKIP(session, paged("64MiB"));
  const auto alone = run_alone(*session, 24);
  SchedulerStats stats;
  expect_same(alone, run_batched(*session, 24, {}, &stats));
  EXPECT_EQ(stats.max_running, 5);
  EXPECT_EQ(stats.preemptions, 0);
  // Waste is at most the unfilled part of each sequence's last block.
  EXPECT_LT(stats.peak_kv_waste_percent, 25.0);
}

TEST(Batching, PreemptionUnderMemoryPressureStillMatches) {
  // 4.5 MiB holds ~100 tokens of KV (46080 bytes each): too little for five
  // requests of ~60 tokens at once, enough for any one of them.
  TESSERA_OPEN_OR_SKIP(session, paged("4608KiB"));
  const auto alone = run_alone(*session, 20);
  SchedulerConfig optimistic;
  optimistic.reserve_max_tokens = false;  // admit on the prompt alone: growth must preempt
  SchedulerStats stats;
  expect_same(alone, run_batched(*session, 20, optimistic, &stats));
  EXPECT_GT(stats.preemptions, 0) << "the pool was meant to run out";
  // Reserving prompt + max_tokens at admission avoids preemption altogether.
  SchedulerStats reserved;
  expect_same(alone, run_batched(*session, 20, {}, &reserved));
  EXPECT_EQ(reserved.preemptions, 0);
}

TEST(Batching, PrefixCacheHitGivesIdenticalOutput) {
  TESSERA_OPEN_OR_SKIP(session, paged("64MiB"));
  const GenerationRequest request = greedy(
      "Summarize the following in one sentence: the paged KV cache splits memory into fixed-size blocks that "
      "are mapped by a block table, so almost nothing is wasted and sequences can share a prefix.",
      16);
  auto first = session->generate(request);
  ASSERT_TRUE(first.ok()) << first.status().message();
  const int64_t hits_before = session->memory().stats().prefix_hit_tokens;
  auto second = session->generate(request);
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_GT(session->memory().stats().prefix_hit_tokens, hits_before) << "the second run should reuse blocks";
  EXPECT_EQ(first->metrics.token_ids, second->metrics.token_ids);
}

// Online use, as the server drives the scheduler: requests arrive between
// steps, are cancelled (their memory freed at once) and forgotten.
TEST(Batching, ArrivalsBetweenStepsMatchRunningAlone) {
  TESSERA_OPEN_OR_SKIP(session, paged("64MiB"));
  const auto alone = run_alone(*session, 12);
  Scheduler scheduler(*session);
  std::map<size_t, RequestOutcome> outcomes;
  auto on_done = [&](const RequestOutcome& o) { outcomes[o.index] = o; };
  size_t next = 0;
  while (next < kPrompts.size() || scheduler.busy()) {
    if (next < kPrompts.size()) scheduler.submit(greedy(kPrompts[next++], 12));  // one arrival per step
    ASSERT_TRUE(scheduler.step({}, on_done).ok());
  }
  ASSERT_EQ(outcomes.size(), kPrompts.size());
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    ASSERT_TRUE(outcomes[i].status.ok()) << outcomes[i].status.message();
    EXPECT_EQ(outcomes[i].result.metrics.token_ids, alone[i]) << "request " << i;
    scheduler.forget(i);
  }
  EXPECT_GT(scheduler.stats().max_running, 1);
}

TEST(Batching, CancelFreesMemoryAtOnceAndLeavesTheOthersUnchanged) {
  TESSERA_OPEN_OR_SKIP(session, paged("64MiB"));
  const auto alone = run_alone(*session, 16);
  Scheduler scheduler(*session);
  for (const auto& p : kPrompts) scheduler.submit(greedy(p, 16));
  std::vector<RequestOutcome> done;
  auto on_done = [&](const RequestOutcome& o) { done.push_back(o); };
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(scheduler.step({}, on_done).ok());
  ASSERT_TRUE(done.empty());
  const int64_t blocks_before = session->memory().stats().blocks_used;
  ASSERT_TRUE(scheduler.cancel(1, on_done));
  EXPECT_FALSE(scheduler.cancel(1, on_done)) << "a request ends once";
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].index, 1u);
  EXPECT_TRUE(done[0].status.ok());
  EXPECT_EQ(done[0].result.metrics.stop_reason, "cancelled");
  EXPECT_GT(done[0].result.metrics.generated_tokens, 0);
  // Its tokens so far are the ones it would have generated alone.
  const auto& partial = done[0].result.metrics.token_ids;
  EXPECT_TRUE(std::equal(partial.begin(), partial.end(), alone[1].begin()));
  EXPECT_LT(session->memory().stats().blocks_used, blocks_before) << "its blocks are free before the next step";
  while (scheduler.busy()) ASSERT_TRUE(scheduler.step({}, on_done).ok());
  for (const auto& o : done) {
    if (o.index == 1) continue;
    EXPECT_EQ(o.result.metrics.token_ids, alone[o.index]) << "request " << o.index;
  }
  EXPECT_EQ(session->memory().stats().blocks_used, 0);
}

TEST(Batching, StopStringEndsTheRequestShortOfIt) {
  TESSERA_OPEN_OR_SKIP(session, (Overrides{}));
  GenerationRequest request = greedy("List three fruits.", 48);
  auto full = session->generate(request);
  ASSERT_TRUE(full.ok()) << full.status().message();
  // Stop at the second word of the answer, wherever the tokens split it.
  const std::string& text = full->text;
  const size_t space = text.find(' ', 1);
  ASSERT_NE(space, std::string::npos) << text;
  const std::string stop = text.substr(space, 3);
  request.stop = {stop};
  std::string streamed;
  auto stopped = session->generate(request, [&](std::string_view t) { streamed += t; });
  ASSERT_TRUE(stopped.ok()) << stopped.status().message();
  EXPECT_EQ(stopped->metrics.stop_reason, "stop");
  EXPECT_EQ(stopped->text, text.substr(0, space));
  EXPECT_EQ(streamed, stopped->text);
  EXPECT_LT(stopped->metrics.generated_tokens, full->metrics.generated_tokens);
}

TEST(Batching, AConversationGoesThroughTheChatTemplate) {
  TESSERA_OPEN_OR_SKIP(session, (Overrides{}));
  GenerationRequest one_turn = greedy("List three fruits.", 8);
  GenerationRequest as_messages = one_turn;
  as_messages.prompt.clear();
  as_messages.messages = {{"user", "List three fruits."}};
  auto a = session->prompt_ids(one_turn);
  auto b = session->prompt_ids(as_messages);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  as_messages.messages = {{"system", "Answer briefly."}, {"user", "Hi"}, {"assistant", "Hello!"}, {"user", "Bye"}};
  auto c = session->prompt_ids(as_messages);
  ASSERT_TRUE(c.ok()) << c.status().message();
  const std::string rendered = session->tokenizer().decode(*c, /*render_special=*/true);
  EXPECT_NE(rendered.find("Answer briefly."), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("Hello!"), std::string::npos) << rendered;
  EXPECT_LT(rendered.find("Hello!"), rendered.find("Bye")) << rendered;
}

}  // namespace
}  // namespace tessera::test
