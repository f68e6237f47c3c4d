// The "update" part of a step on its own: a token chosen from each
// request's row, drafts verified and the memory rolled back past the
// rejected ones, stop conditions, streamed text, non-finite logits.
#include "engine/output_processor.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <limits>
#include <string>

#include "engine/fakes_testing.hpp"

namespace tessera {
namespace {

using testing::ArgmaxStrategy;
using testing::FakeMemory;
using testing::make_request;

constexpr size_t kVocab = 257;  // bytes + the end token

class OutputProcessorTest : public ::testing::Test {
 protected:
  OutputProcessorTest() : memory_(4, 100, 1000) {}

  // Admits `r` with its first `n` tokens in memory.
  void admit(Request& r, int32_t n) {
    r.seq = *memory_.create_sequence();
    r.has_seq = true;
    ASSERT_TRUE(memory_.append_slots(r.seq, n).ok());
    table_.running.push_back(&r);
  }
  // Rows of logits whose argmax is each given token in turn.
  std::span<float> rows(const std::vector<int32_t>& argmax) {
    storage_.emplace_back(argmax.size() * kVocab, 0.0f);
    for (size_t r = 0; r < argmax.size(); ++r) storage_.back()[r * kVocab + static_cast<size_t>(argmax[r])] = 1.0f;
    return storage_.back();
  }
  Status apply(OutputProcessor& outputs, const StepPlan& plan, std::vector<std::span<float>> item_rows,
               std::string* streamed = nullptr) {
    StepTotals totals;
    return outputs.apply(
        table_, plan, [&](size_t i) { return item_rows[i]; },
        [&](size_t, std::string_view text) {
          if (streamed) *streamed += text;
        },
        [&](const RequestOutcome&) { ++finished_; }, totals);
  }

  tok::Tokenizer tokenizer_ = testing::byte_tokenizer();
  FakeMemory memory_;
  ArgmaxStrategy strategy_;
  RequestTable table_;
  std::deque<std::vector<float>> storage_;
  int finished_ = 0;
};

TEST_F(OutputProcessorTest, APlainStepCommitsTheTokenAndStreamsItsText) {
  auto r = make_request(0, {'H', 'i'}, 5, tokenizer_);
  admit(*r, 2);
  OutputProcessor outputs(memory_, strategy_, tokenizer_, 1000, true, {});
  std::string streamed;
  ASSERT_TRUE(apply(outputs, {{{r.get(), 2, 1, 0}}, false, {}}, {rows({'!'})}, &streamed).ok());
  EXPECT_EQ(r->n_computed, 2);
  EXPECT_EQ(r->n_tokens(), 3);
  EXPECT_EQ(streamed, "!");
  EXPECT_EQ(r->outcome.result.text, "!");
  EXPECT_EQ(r->outcome.result.metrics.generated_tokens, 1);
  EXPECT_FALSE(r->done);
}

TEST_F(OutputProcessorTest, APromptChunkShortOfItsEndChoosesNothing) {
  auto r = make_request(0, {'a', 'b', 'c', 'd'}, 5, tokenizer_);
  admit(*r, 2);
  OutputProcessor outputs(memory_, strategy_, tokenizer_, 1000, true, {});
  ASSERT_TRUE(apply(outputs, {{{r.get(), 2, 0, 0}}, false, {}}, {{}}).ok());
  EXPECT_EQ(r->n_computed, 2);
  EXPECT_EQ(strategy_.steps, 0);
  EXPECT_EQ(r->n_tokens(), 4);
}

TEST_F(OutputProcessorTest, StopsAtTheEndTokenAtMaxTokensAndAtTheContext) {
  OutputProcessor outputs(memory_, strategy_, tokenizer_, 4, true, {});
  auto eos = make_request(0, {'a'}, 5, tokenizer_);
  auto max = make_request(1, {'b'}, 1, tokenizer_);
  auto full = make_request(2, {'c', 'd', 'e'}, 9, tokenizer_);
  admit(*eos, 1);
  admit(*max, 1);
  admit(*full, 3);
  const StepPlan plan{{{eos.get(), 1, 1, 0}, {max.get(), 1, 1, 0}, {full.get(), 3, 1, 0}}, false, {}};
  ASSERT_TRUE(apply(outputs, plan, {rows({256}), rows({'x'}), rows({'y'})}).ok());
  EXPECT_EQ(eos->outcome.result.metrics.stop_reason, "eos");
  EXPECT_EQ(eos->outcome.result.metrics.generated_tokens, 0) << "the end token is not part of the answer";
  EXPECT_EQ(max->outcome.result.metrics.stop_reason, "max_tokens");
  EXPECT_EQ(full->outcome.result.metrics.stop_reason, "context_full");
  EXPECT_EQ(finished_, 3);
  EXPECT_TRUE(table_.running.empty());
  EXPECT_EQ(memory_.releases, 3) << "a finished request frees its memory at once";
}

// A verification step: the last token and three drafts ran; rows 0..3.
TEST_F(OutputProcessorTest, VerifyingKeepsTheAcceptedDraftsAndDropsTheRest) {
  auto r = make_request(0, {'a', 'b'}, 20, tokenizer_);
  admit(*r, 1);
  r->n_computed = 1;
  r->ctx->propose(std::vector<int32_t>{'c', 'd', 'e'});
  ASSERT_TRUE(memory_.append_slots(r->seq, 4).ok());  // the planner's reservation: 'b' and three drafts
  OutputProcessor outputs(memory_, strategy_, tokenizer_, 1000, true, {});
  // The target agrees with 'c' and 'd', then says 'Z' where the draft said 'e'.
  ASSERT_TRUE(apply(outputs, {{{r.get(), 4, 4, 3}}, true, {}}, {rows({'c', 'd', 'Z', 'q'})}).ok());
  EXPECT_EQ(r->outcome.result.text, "cdZ");
  EXPECT_EQ(r->n_tokens(), 5);
  EXPECT_TRUE(r->ctx->proposed().empty());
  EXPECT_EQ(r->n_computed, 4) << "a, b and the two accepted drafts are in memory";
  EXPECT_EQ(memory_.length(r->seq), 4) << "the rejected draft's slot is gone";
  EXPECT_EQ(memory_.truncations, 1);
  EXPECT_EQ(r->outcome.result.metrics.drafted_tokens, 3);
  EXPECT_EQ(r->outcome.result.metrics.accepted_tokens, 2);
}

TEST_F(OutputProcessorTest, EveryDraftAcceptedAddsTheBonusToken) {
  auto r = make_request(0, {'a', 'b'}, 20, tokenizer_);
  admit(*r, 1);
  r->n_computed = 1;
  r->ctx->propose(std::vector<int32_t>{'c', 'd'});
  ASSERT_TRUE(memory_.append_slots(r->seq, 3).ok());
  OutputProcessor outputs(memory_, strategy_, tokenizer_, 1000, true, {});
  ASSERT_TRUE(apply(outputs, {{{r.get(), 3, 3, 2}}, true, {}}, {rows({'c', 'd', 'e'})}).ok());
  EXPECT_EQ(r->outcome.result.text, "cde");
  EXPECT_EQ(r->n_computed, 4);
  EXPECT_EQ(memory_.length(r->seq), 4);
  EXPECT_EQ(memory_.truncations, 0);
  EXPECT_EQ(r->outcome.result.metrics.accepted_tokens, 2);
}

TEST_F(OutputProcessorTest, ARecurrentMemoryGoesBackToItsCheckpoint) {
  FakeMemory recurrent(4, 100, 1000, /*recurrent=*/true);
  auto r = make_request(0, {'a', 'b'}, 20, tokenizer_);
  r->seq = *recurrent.create_sequence();
  r->has_seq = true;
  ASSERT_TRUE(recurrent.append_slots(r->seq, 1).ok());
  table_.running.push_back(r.get());
  r->n_computed = 1;
  r->checkpoint = *recurrent.checkpoint(r->seq);  // as the planner takes it
  r->ctx->propose(std::vector<int32_t>{'c', 'd'});
  ASSERT_TRUE(recurrent.append_slots(r->seq, 3).ok());
  OutputProcessor outputs(recurrent, strategy_, tokenizer_, 1000, false, {});
  ASSERT_TRUE(apply(outputs, {{{r.get(), 3, 3, 2}}, true, {}}, {rows({'c', 'X', 'q'})}).ok());
  EXPECT_EQ(r->outcome.result.text, "cX");
  EXPECT_EQ(recurrent.restores, 1);
  EXPECT_EQ(r->n_computed, 1) << "back to the state before the drafts";
  EXPECT_EQ(recurrent.fake_state(r->seq), 1) << "the state the checkpoint held";
  EXPECT_EQ(recurrent.live_checkpoints(), 0u) << "the checkpoint is dropped after use";
  EXPECT_FALSE(r->checkpoint.has_value());
  EXPECT_EQ(r->n_tokens(), 4) << "a, b, c, X: the next step computes b, c and X again";
}

TEST_F(OutputProcessorTest, NonFiniteLogitsAreExplainedNotSampled) {
  auto r = make_request(0, {'a'}, 5, tokenizer_);
  admit(*r, 1);
  bool explained = false;
  OutputProcessor outputs(memory_, strategy_, tokenizer_, 1000, true, [&] {
    explained = true;
    return CorruptData("model is broken");
  });
  std::span<float> row = rows({'b'});
  row[7] = std::numeric_limits<float>::quiet_NaN();
  const Status s = apply(outputs, {{{r.get(), 1, 1, 0}}, false, {}}, {row});
  EXPECT_EQ(s.code(), StatusCode::corrupt_data);
  EXPECT_TRUE(explained);
  EXPECT_EQ(strategy_.steps, 0);
}

TEST(AllFinite, FindsNaNAndInfinityAnywhere) {
  std::vector<float> v(1000, 1.5f);
  EXPECT_TRUE(all_finite(v));
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    for (size_t at : {size_t{0}, size_t{517}, size_t{999}}) {
      v[at] = bad;
      EXPECT_FALSE(all_finite(v)) << at;
      v[at] = 1.5f;
    }
  }
  v[3] = std::numeric_limits<float>::max();
  v[4] = std::numeric_limits<float>::denorm_min();
  EXPECT_TRUE(all_finite(v)) << "large and subnormal values are finite";
}

}  // namespace
}  // namespace tessera
