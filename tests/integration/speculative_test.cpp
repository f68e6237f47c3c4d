// Speculative decoding on the real model ([speculative]): greedy ids are the
// target's own whatever drafts them (a draft model that differs from the
// target, prompt lookup, both), alone and batched on the paged cache; the
// rows a verification step computes are the single steps' logits bit for
// bit; sampling verification emits the target's distribution on the model's
// own logits; a draft of another vocabulary is refused; a draft whose head
// keeps part of the vocabulary leaves the ids and computes the kept ids'
// logits (to float rounding) and -infinity for the others.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "engine/decoding_context.hpp"
#include "engine/draft_model.hpp"
#include "engine/draft_vocabulary.hpp"
#include "engine/draft_verification.hpp"
#include "engine/scheduler.hpp"
#include "engine/vocabulary_subset_linear.hpp"
#include "model/gguf_writer.hpp"
#include "model/model_file.hpp"
#include "model_fixture.hpp"
#include "support/scratch_dir.hpp"

namespace tessera::test {
namespace {

namespace fs = std::filesystem;
using Overrides = std::vector<PipelineOverride>;

const std::vector<std::string> kSpeculativePrompts = {
    "Write a Python function that checks whether a string is a palindrome.",
    "Repeat this list twice: apples, pears, plums, cherries, figs, dates.",
    "Explain what a hash table is.",
};

// A copy of the default model with `edit` applied to its tensors' bytes or
// its token texts, written to `file`.
using TensorEdit = std::function<void(const TensorRef&, std::vector<std::byte>&)>;
using TokenEdit = std::function<void(std::vector<std::string>&)>;
Status write_edited_copy(const ModelFile& original, const tok::Tokenizer& tokenizer, const fs::path& file,
                         const TensorEdit& edit_tensor, const TokenEdit& edit_tokens) {
  GgufWriter writer;
  for (const auto& [key, value] : original.gguf()->metadata())
    if (key != "general.alignment") writer.set(key, value);
  if (edit_tokens) {
    std::vector<std::string> tokens;
    for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) tokens.push_back(tokenizer.token_text(id));
    edit_tokens(tokens);
    writer.set_string_array("tokenizer.ggml.tokens", tokens);
  }
  for (const TensorRef& t : original.tensors()) {
    std::vector<uint64_t> dims;  // GGUF order: innermost first
    for (int i = t.ndim - 1; i >= 0; --i) dims.push_back(static_cast<uint64_t>(t.shape[i]));
    const auto* data = static_cast<const std::byte*>(t.data);
    std::vector<std::byte> bytes(data, data + t.nbytes);
    if (edit_tensor) edit_tensor(t, bytes);
    TESSERA_RETURN_IF_ERROR(writer.add_tensor(t.name, t.dtype, std::move(dims), bytes));
  }
  return writer.write(file.string());
}

// The draft: the default model with the feed-forward output of its last
// block removed (every block's scale zeroed), so it mostly agrees with the
// target and sometimes does not. Written once per test process.
const fs::path& differing_draft(const Session& target) {
  static const fs::path file = [&] {
    const fs::path f = scratch_dir("tessera_integration_test") / "draft.gguf";  // removed with the folder at exit
    auto model = open_model(kModel.string());
    EXPECT_TRUE(model.ok()) << model.status().message();
    const Status written = write_edited_copy(
        **model, target.tokenizer(), f,
        [](const TensorRef& t, std::vector<std::byte>& bytes) {
          if (t.name == "blk.29.ffn_down.weight") std::fill(bytes.begin(), bytes.end(), std::byte{0});
        },
        {});
    EXPECT_TRUE(written.ok()) << written.message();
    return f;
  }();
  return file;
}

Overrides draft_model(const Session& target, const std::string& method = "draft-model") {
  return {{"speculative", "method", fmt::format("\"{}\"", method)},
          {"speculative", "draft_model", differing_draft(target).string(), true},
          {"speculative", "adaptive", "false"},  // always draft: exercise verification, not the policy
          {"speculative", "max_draft_tokens", "4"},
          {"speculative", "draft_min_probability", "0"}};
}

Overrides with(Overrides a, const Overrides& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct Generated {
  std::vector<std::vector<int32_t>> ids;
  SchedulerStats stats;
};

// Every prompt greedy, together in one scheduler (batched) or one at a time.
Generated generate(Session& session, bool together, int64_t max_tokens = 32) {
  Generated run;
  auto go = [&](const std::vector<std::string>& prompts) {
    Scheduler scheduler(session);
    for (const auto& p : prompts) scheduler.submit(greedy(p, max_tokens));
    auto out = scheduler.run();
    EXPECT_TRUE(out.ok()) << out.status().message();
    if (!out.ok()) return;
    for (const auto& o : *out) {
      EXPECT_TRUE(o.status.ok()) << o.status.message();
      run.ids.push_back(o.result.metrics.token_ids);
    }
    run.stats.speculation.merge(scheduler.stats().speculation);
    run.stats.steps += scheduler.stats().steps;
  };
  if (together) {
    go(kSpeculativePrompts);
  } else {
    for (const auto& p : kSpeculativePrompts) go({p});
  }
  return run;
}

TEST(Speculative, ADraftModelLeavesTheTargetsGreedyIds) {
  TESSERA_OPEN_OR_SKIP(target, (Overrides{}));
  TESSERA_OPEN_OR_SKIP(speculative, draft_model(*target));
  const Generated plain = generate(*target, false);
  const Generated drafted = generate(*speculative, false);
  EXPECT_EQ(drafted.ids, plain.ids);
  const SpeculationStats& s = drafted.stats.speculation;
  EXPECT_GT(s.accepted_tokens, 0) << "the draft agrees with the target on many tokens";
  EXPECT_LT(s.accepted_tokens, s.drafted_tokens) << "and not on all: rejections were exercised";
  EXPECT_LT(drafted.stats.steps, plain.stats.steps) << "accepted drafts save steps";
}

TEST(Speculative, PromptLookupLeavesTheTargetsGreedyIds) {
  TESSERA_OPEN_OR_SKIP(target, (Overrides{}));
  TESSERA_OPEN_OR_SKIP(lookup, (Overrides{{"speculative", "method", "\"prompt-lookup\""},
                                          {"speculative", "adaptive", "false"}}));
  const Generated plain = generate(*target, false);
  const Generated drafted = generate(*lookup, false);
  EXPECT_EQ(drafted.ids, plain.ids);
  EXPECT_GT(drafted.stats.speculation.accepted_tokens, 0) << "the repeated list recurs in the answer";
}

TEST(Speculative, BatchedOnAPagedCacheEachRequestGetsItsIdsAlone) {
  const Overrides paged = {{"kvcache", "plugin", "paged"},
                           {"kvcache", "memory", "\"64MiB\""},
                           {"attention", "plugin", "paged"}};
  TESSERA_OPEN_OR_SKIP(target, paged);
  TESSERA_OPEN_OR_SKIP(speculative, with(draft_model(*target, "both"), paged));
  const Generated alone = generate(*target, false);
  const Generated batched = generate(*speculative, true);
  EXPECT_EQ(batched.ids, alone.ids);
  EXPECT_GT(batched.stats.speculation.accepted_tokens, 0);
  EXPECT_LT(batched.stats.speculation.accepted_tokens, batched.stats.speculation.drafted_tokens);
}

// Feeds `tokens` after a prefill of `prefill`, `rows` at a time with every
// row's logits (as a verification step does), into `logits`.
void feed_in_steps(Session& session, std::span<const int32_t> tokens, size_t prefill, size_t rows,
                   std::vector<float>& logits) {
  const auto vocab = static_cast<size_t>(session.vocab_size());
  logits.assign((tokens.size() - prefill) * vocab, 0.0f);
  auto seq = session.memory().create_sequence();
  ASSERT_TRUE(seq.ok()) << seq.status().message();
  std::vector<float> last(vocab);
  ASSERT_TRUE(session.extend(*seq, tokens.first(prefill), 0, false, last.data()).ok());
  for (size_t i = prefill; i < tokens.size(); i += rows) {
    const size_t n = std::min(rows, tokens.size() - i);
    const Status s = session.extend(*seq, tokens.subspan(i, n), static_cast<int32_t>(i), true,
                                    logits.data() + (i - prefill) * vocab);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  session.memory().release(*seq);
}

void expect_rows_equal_single_steps(Session& session) {
  std::vector<int32_t> tokens;
  for (int32_t i = 0; i < 60; ++i) tokens.push_back(200 + (i * 7919) % 30000);
  std::vector<float> single, verified;
  feed_in_steps(session, tokens, 40, 1, single);
  feed_in_steps(session, tokens, 40, 5, verified);
  ASSERT_EQ(single.size(), verified.size());
  EXPECT_EQ(std::memcmp(single.data(), verified.data(), single.size() * sizeof(float)), 0)
      << "a step of 5 rows gave other logits than 5 steps of one";
}

TEST(Speculative, VerificationRowsAreTheSingleStepsLogitsBitForBitOnAContiguousCache) {
  TESSERA_OPEN_OR_SKIP(session, (Overrides{{"run", "adapt_threads", "false"}}));
  expect_rows_equal_single_steps(*session);
}

TEST(Speculative, VerificationRowsAreTheSingleStepsLogitsBitForBitOnAPagedCache) {
  TESSERA_OPEN_OR_SKIP(session, (Overrides{{"run", "adapt_threads", "false"},
                                           {"kvcache", "plugin", "paged"},
                                           {"kvcache", "memory", "\"32MiB\""}}));
  expect_rows_equal_single_steps(*session);
}

// The upper 0.1% point of chi-square with `dof` degrees of freedom
// (Wilson-Hilferty): a correct verifier fails it with fixed seeds never.
double chi_square_bound(int dof) {
  const double z = 3.09;
  const double a = 2.0 / (9.0 * dof);
  return dof * std::pow(1.0 - a + z * std::sqrt(a), 3);
}

// Chi-square of `counts` (over `trials`) against p, over the tokens with an
// expected count of at least 5, the rest lumped into one cell.
void expect_distributed_as(const std::vector<float>& p, std::map<int32_t, int>& counts, int trials,
                           const char* what) {
  double chi = 0, rest_expected = trials, rest_seen = trials;
  int cells = 0;
  for (size_t v = 0; v < p.size(); ++v) {
    const double expected = p[v] * trials;
    if (expected < 5) continue;
    const double seen = counts.count(static_cast<int32_t>(v)) ? counts[static_cast<int32_t>(v)] : 0;
    chi += (seen - expected) * (seen - expected) / expected;
    rest_seen -= seen;
    rest_expected -= expected;
    ++cells;
  }
  if (rest_expected >= 5) {
    chi += (rest_seen - rest_expected) * (rest_seen - rest_expected) / rest_expected;
    ++cells;
  }
  ASSERT_GE(cells, 2);
  EXPECT_LT(chi, chi_square_bound(cells - 1)) << cells << " cells; " << what << " is not distributed as expected";
}

// Sampling at `temperature` with top-k and top-p, min-p off.
SamplingSettings sampling_settings(double temperature, int64_t top_k, double top_p) {
  SamplingSettings s;
  s.temperature = temperature;
  s.top_k = top_k;
  s.top_p = top_p;
  s.min_p = 0;
  return s;
}

// The seeds' settings: temperature 0.7, top-p 0.9 (and top-k 40, as the
// pipelines' default, which keeps each trial cheap).
SamplingSettings seeds_settings() { return sampling_settings(0.7, 40, 0.9); }

TEST(Speculative, SamplingVerificationEmitsTheTargetsDistributionOnTheModelsLogits) {
  TESSERA_OPEN_OR_SKIP(session, (Overrides{{"decoding", "plugin", "sampling"}}));
  auto prompt = session->prompt_ids(greedy("Name a colour.", 1));
  ASSERT_TRUE(prompt.ok());
  const SamplingSettings sampling = seeds_settings();
  // The target's distribution after the prompt, and a draft proposing the
  // target's second most likely token then anything: a proposal that is
  // sometimes right.
  auto logits = session->score(*prompt);
  ASSERT_TRUE(logits.ok()) << logits.status().message();
  const auto vocab = static_cast<size_t>(session->vocab_size());
  std::vector<float> first(logits->end() - static_cast<std::ptrdiff_t>(vocab), logits->end());
  std::vector<float> p(vocab);
  {
    RequestDecodingContext ctx(*prompt, sampling);
    std::vector<float> row = first;
    ctx.set_logits(row);
    ASSERT_TRUE(session->strategy().distribution(ctx, p).ok());
  }
  std::vector<size_t> order(vocab);
  for (size_t i = 0; i < vocab; ++i) order[i] = i;
  std::partial_sort(order.begin(), order.begin() + 2, order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
  ASSERT_GT(p[order[1]], 0.01f) << "the prompt should leave more than one likely token";
  std::vector<int32_t> with_draft = *prompt;
  const std::vector<int32_t> draft = {static_cast<int32_t>(order[1]), 13};
  with_draft.insert(with_draft.end(), draft.begin(), draft.end());
  auto rows = session->score(with_draft);
  ASSERT_TRUE(rows.ok());
  const std::vector<float> verify_rows(rows->end() - static_cast<std::ptrdiff_t>(3 * vocab), rows->end());

  constexpr int kTrials = 2000;
  std::map<int32_t, int> counts;
  for (int t = 0; t < kTrials; ++t) {
    SamplingSettings seeded = sampling;
    seeded.seed = static_cast<uint64_t>(t);
    RequestDecodingContext ctx(*prompt, seeded);
    ctx.propose(draft);
    std::vector<float> work = verify_rows;  // the strategy may change them in place
    ctx.set_logits(work);
    std::vector<int32_t> out;
    ASSERT_TRUE(session->strategy().verify(ctx, out).ok());
    ASSERT_FALSE(out.empty());
    ++counts[out.front()];
  }
  expect_distributed_as(p, counts, kTrials, "the first token a verification emits");
  EXPECT_GT(counts[draft[0]], 0) << "the drafted token is sometimes kept";
}

// The target's strategy after `prompt` with `settings`, and its distribution
// on `draft`'s logits there (the q a sampled draft is drawn from).
struct TwoDistributions {
  std::vector<float> target_row;  // the target's logits after the prompt
  std::vector<float> p, q;
};
TwoDistributions distributions_after(Session& target, Session& draft, const std::vector<int32_t>& prompt,
                                     const SamplingSettings& settings) {
  TwoDistributions d;
  const auto vocab = static_cast<size_t>(target.vocab_size());
  auto t = target.score(prompt);
  auto q = draft.score(prompt);
  EXPECT_TRUE(t.ok() && q.ok());
  if (!t.ok() || !q.ok()) return d;
  d.target_row.assign(t->end() - static_cast<std::ptrdiff_t>(vocab), t->end());
  std::vector<float> draft_row(q->end() - static_cast<std::ptrdiff_t>(vocab), q->end());
  d.p.resize(vocab);
  d.q.resize(vocab);
  const auto distribution_of = [&](std::vector<float> row, std::vector<float>& out) {
    RequestDecodingContext ctx(prompt, settings);
    ctx.set_logits(row);  // a copy: the strategy may rewrite it
    EXPECT_TRUE(target.strategy().distribution(ctx, out).ok());
  };
  distribution_of(d.target_row, d.p);
  distribution_of(draft_row, d.q);
  return d;
}

// A draft model asked to sample draws its proposals from the request's
// strategy's distribution on the draft's own logits, and hands that q over;
// asked by a greedy strategy, it proposes its most likely token, certain.
TEST(Speculative, SampledDraftsAreDrawnFromTheStrategysDistributionOnTheDraftsLogits) {
  TESSERA_OPEN_OR_SKIP(target, (Overrides{{"decoding", "plugin", "sampling"}}));
  TESSERA_OPEN_OR_SKIP(draft_session, (Overrides{{"model", "path", differing_draft(*target).string(), true}}));
  auto prompt = target->prompt_ids(greedy("Name a colour.", 1));
  ASSERT_TRUE(prompt.ok());
  const SamplingSettings settings = seeds_settings();
  const TwoDistributions d = distributions_after(*target, *draft_session, *prompt, settings);
  ASSERT_FALSE(d.q.empty());
  const size_t vocab = d.q.size();
  DraftModel draft(std::move(draft_session), 0.0);

  constexpr int kTrials = 1000;
  std::map<int32_t, int> counts;
  std::vector<int32_t> out;
  std::vector<float> probs;
  std::vector<double> forward_ms;
  for (int t = 0; t < kTrials; ++t) {
    std::mt19937_64 rng(static_cast<uint64_t>(t));
    const DraftSampling sampling{&target->strategy(), &settings, &rng, vocab};
    out.clear();
    ASSERT_TRUE(draft.draft(0, *prompt, 1, out, forward_ms, &sampling, &probs).ok());
    ASSERT_EQ(out.size(), 1u);
    ASSERT_EQ(probs.size(), vocab) << "one q row per draft, as wide as the target's logits";
    if (t == 0) {
      for (size_t v = 0; v < vocab; ++v) ASSERT_NEAR(probs[v], d.q[v], 1e-6f) << "q differs at id " << v;
    }
    ++counts[out[0]];
  }
  expect_distributed_as(d.q, counts, kTrials, "the drafted token");

  // A greedy strategy's distribution is a point mass: certain drafts, no q.
  TESSERA_OPEN_OR_SKIP(greedy_target, (Overrides{{"decoding", "plugin", "greedy"}}));
  std::mt19937_64 rng(1);
  const DraftSampling greedy_sampling{&greedy_target->strategy(), &settings, &rng, vocab};
  out.clear();
  ASSERT_TRUE(draft.draft(0, *prompt, 3, out, forward_ms, &greedy_sampling, &probs).ok());
  std::vector<int32_t> plain;
  draft.forget(0);  // the draft's memory may hold one sequence
  ASSERT_TRUE(draft.draft(0, *prompt, 3, plain, forward_ms).ok());
  ASSERT_EQ(plain.size(), 3u);
  EXPECT_TRUE(probs.empty());
  EXPECT_EQ(out, plain) << "a greedy strategy's drafts are the draft's most likely tokens";
}

// Proposals drawn from q and verified with q (rejection sampling) emit the
// target's distribution, with a real draft's q that differs from p.
TEST(Speculative, SampledDraftsVerifiedWithTheirDistributionEmitTheTargetsDistribution) {
  TESSERA_OPEN_OR_SKIP(target, (Overrides{{"decoding", "plugin", "sampling"}}));
  TESSERA_OPEN_OR_SKIP(draft_session, (Overrides{{"model", "path", differing_draft(*target).string(), true}}));
  // Temperature 1 and no truncation, and the first of these texts after
  // which p and q overlap without being equal, so that proposals are both
  // kept and rejected.
  const SamplingSettings settings = sampling_settings(1.0, 0, 1.0);
  TwoDistributions d;
  std::vector<int32_t> prompt;
  double overlap = 0;
  for (const char* text : {"The weather today is", "My favourite fruit is the", "Once upon a time, there was a"}) {
    auto ids = target->prompt_ids(greedy(text, 1, /*chat=*/false));
    ASSERT_TRUE(ids.ok());
    d = distributions_after(*target, *draft_session, *ids, settings);
    ASSERT_FALSE(d.p.empty());
    overlap = 0;
    for (size_t v = 0; v < d.p.size(); ++v) overlap += std::min(d.p[v], d.q[v]);
    std::printf("after \"%s\": sum min(p, q) = %.3f\n", text, overlap);
    prompt = *ids;
    if (overlap > 0.1 && overlap < 0.9) break;
  }
  ASSERT_GT(overlap, 0.1) << "no text where p and q overlap";
  ASSERT_LT(overlap, 0.9) << "no text where the draft differs from the target";

  constexpr int kTrials = 2000;
  std::map<int32_t, int> counts;
  int kept = 0;
  std::vector<double> q_weights(d.q.begin(), d.q.end());
  for (int t = 0; t < kTrials; ++t) {
    SamplingSettings seeded = settings;
    seeded.seed = static_cast<uint64_t>(t);
    RequestDecodingContext ctx(prompt, seeded);
    const int32_t x = draw_index(q_weights, 1.0, ctx.rng());
    ctx.propose(std::vector<int32_t>{x}, d.q);
    // Row 1 (after x) only feeds the bonus token, which is not counted here.
    std::vector<float> rows = d.target_row;
    rows.insert(rows.end(), d.target_row.begin(), d.target_row.end());
    ctx.set_logits(rows);
    std::vector<int32_t> out;
    ASSERT_TRUE(verify_draft(target->strategy(), ctx, ctx.proposal_probs(), out).ok());
    ASSERT_FALSE(out.empty());
    kept += out.front() == x && out.size() == 2;
    ++counts[out.front()];
  }
  expect_distributed_as(d.p, counts, kTrials, "the first token a verification of sampled drafts emits");
  // The acceptance rate is sum_x min(p, q): within 5 standard errors.
  const double rate = static_cast<double>(kept) / kTrials;
  const size_t q_top = static_cast<size_t>(std::max_element(d.q.begin(), d.q.end()) - d.q.begin());
  std::printf("sampled drafts kept %.3f of the time (sum min(p, q) = %.3f); a greedy draft would be kept with "
              "p(argmax q) = %.3f\n",
              rate, overlap, static_cast<double>(d.p[q_top]));
  EXPECT_NEAR(rate, overlap, 5 * std::sqrt(overlap * (1 - overlap) / kTrials) + 1e-3);
}

// Through the scheduler: a sampling pipeline with a draft model drafts,
// keeps some drafts, and gives the same ids for the same seed.
TEST(Speculative, SamplingWithADraftModelRunsAndRepeatsForASeed) {
  TESSERA_OPEN_OR_SKIP(plain, (Overrides{{"decoding", "plugin", "sampling"}}));
  TESSERA_OPEN_OR_SKIP(session, with(Overrides{{"decoding", "plugin", "sampling"}}, draft_model(*plain)));
  const auto run = [&] {
    Scheduler scheduler(*session);
    for (const auto& p : kSpeculativePrompts) {
      GenerationRequest r = greedy(p, 24);
      r.sampling = seeds_settings();
      r.sampling.seed = 7;
      scheduler.submit(r);
    }
    auto out = scheduler.run();
    EXPECT_TRUE(out.ok()) << out.status().message();
    std::vector<std::vector<int32_t>> ids;
    if (out.ok())
      for (const auto& o : *out) ids.push_back(o.result.metrics.token_ids);
    return std::pair{ids, scheduler.stats().speculation};
  };
  const auto [first, stats] = run();
  const auto [second, stats2] = run();
  EXPECT_EQ(first, second);
  EXPECT_GT(stats.drafted_tokens, 0);
  EXPECT_GT(stats.accepted_tokens, 0);
  std::printf("sampled drafts: %lld drafted, %lld kept\n", static_cast<long long>(stats.drafted_tokens),
              static_cast<long long>(stats.accepted_tokens));
}

TEST(Speculative, ADraftOfAnotherVocabularyIsRefusedSayingWhere) {
  TESSERA_OPEN_OR_SKIP(target, (Overrides{}));
  auto model = open_model(kModel.string());
  ASSERT_TRUE(model.ok()) << model.status().message();
  const fs::path file = scratch_dir("tessera_integration_test") / fmt::format("tessera-vocab-{}.gguf", getpid());
  // Two special tokens' texts swapped: the tokenizer still loads.
  ASSERT_TRUE(write_edited_copy(**model, target->tokenizer(), file, {},
                                [](std::vector<std::string>& tokens) { std::swap(tokens[1], tokens[2]); })
                  .ok());
  PluginRegistry registry;
  registry.scan({fs::path(TESSERA_PLUGIN_BUILD_DIR)});
  auto pipeline = load_pipeline(kPipelines / "quickstart.toml",
                                {{"speculative", "method", "\"draft-model\""},
                                 {"speculative", "draft_model", file.string(), true}},
                                registry);
  ASSERT_TRUE(pipeline.ok()) << pipeline.status().message();
  auto session = Session::open(*pipeline, registry);
  fs::remove(file);
  ASSERT_FALSE(session.ok()) << "a draft of another vocabulary was accepted";
  EXPECT_EQ(session.status().code(), StatusCode::invalid_argument);
  EXPECT_NE(session.status().message().find("differ at id 1:"), std::string::npos) << session.status().message();
}

// A text for a draft's vocabulary ([speculative] draft_vocabulary): two of
// the prompts and a sentence, so the kept ids are a few dozen of SmolLM2's
// 49,152 and the answers hold many tokens outside them.
const fs::path& draft_vocabulary_text() {
  static const fs::path file = [] {
    const fs::path f = scratch_dir("tessera_integration_test") / "draft-vocabulary.txt";
    std::ofstream(f) << kSpeculativePrompts[0] << "\n" << kSpeculativePrompts[2]
                     << "\nA string is a palindrome when it reads the same both ways: the function returns True.\n";
    return f;
  }();
  return file;
}

Overrides keeping_vocabulary(int64_t size) {
  return {{"speculative", "draft_vocabulary", draft_vocabulary_text().string(), true},
          {"speculative", "draft_vocabulary_size", std::to_string(size)}};
}

TEST(Speculative, ADraftKeepingPartOfTheVocabularyLeavesTheTargetsGreedyIds) {
  TESSERA_OPEN_OR_SKIP(target, (Overrides{}));
  TESSERA_OPEN_OR_SKIP(speculative, with(draft_model(*target), keeping_vocabulary(40)));
  const Generated plain = generate(*target, false);
  const Generated drafted = generate(*speculative, false);
  EXPECT_EQ(drafted.ids, plain.ids);
  const SpeculationStats& s = drafted.stats.speculation;
  EXPECT_GT(s.accepted_tokens, 0) << "the kept tokens are drafted and accepted";
  EXPECT_LT(s.accepted_tokens, s.drafted_tokens);
}

TEST(Speculative, ADraftsHeadComputesTheMostUsedTokensLogitsAndNoOthers) {
  if (!fs::exists(kModel)) TESSERA_MODEL_ABSENT(kModel.string() + " is absent: run scripts/fetch-model.sh");
  PluginRegistry& registry = test_registry();
  const Overrides drafting = with({{"speculative", "method", "\"draft-model\""},
                                   {"speculative", "draft_model", kModel.string(), true},
                                   {"run", "threads", "2"}},
                                  keeping_vocabulary(40));
  auto pipeline = load_pipeline(kPipelines / "quickstart.toml", drafting, registry);
  ASSERT_TRUE(pipeline.ok()) << pipeline.status().message();
  ASSERT_NE(pipeline->draft, nullptr);
  EXPECT_EQ(pipeline->draft->output_vocabulary_size, 40);
  auto kept_head = Session::open(*pipeline->draft, registry);
  ASSERT_TRUE(kept_head.ok()) << kept_head.status().message();
  Pipeline whole_pipeline = *pipeline->draft;
  whole_pipeline.output_vocabulary_text.clear();
  auto whole_head = Session::open(whole_pipeline, registry);
  ASSERT_TRUE(whole_head.ok()) << whole_head.status().message();

  const tok::Tokenizer& tokenizer = (*kept_head)->tokenizer();
  auto kept = most_used_tokens_in_file(tokenizer, draft_vocabulary_text(), 40);
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  std::vector<bool> is_kept(static_cast<size_t>(tokenizer.vocab_size()), false);
  for (int32_t id : *kept) is_kept[static_cast<size_t>(id)] = true;
  EXPECT_TRUE(is_kept[static_cast<size_t>(tokenizer.eos_id())]) << "control tokens stay proposable";
  EXPECT_LT(kept->size(), 100u);
  EXPECT_LT((*kept_head)->model().weight_bytes(), (*whole_head)->model().weight_bytes());

  const std::vector<int32_t> tokens = tokenizer.encode(kSpeculativePrompts[0]);
  auto kept_logits = (*kept_head)->score(tokens);
  auto whole_logits = (*whole_head)->score(tokens);
  ASSERT_TRUE(kept_logits.ok() && whole_logits.ok());
  ASSERT_EQ(kept_logits->size(), whole_logits->size());
  const size_t vocab = static_cast<size_t>((*kept_head)->model().vocab_size());
  // The kept rows are a matrix of another shape: the plugin may order a
  // few of their sums otherwise (a 46-row head: 2 float ulps at most seen).
  size_t differing = 0, finite_dropped = 0;
  for (size_t i = 0; i < kept_logits->size(); ++i) {
    const size_t id = i % vocab;
    const float got = (*kept_logits)[i], whole = (*whole_logits)[i];
    if (id < is_kept.size() && is_kept[id])
      differing += !(std::abs(got - whole) <= 1e-5f * (1.0f + std::abs(whole)));
    else
      finite_dropped += got != -std::numeric_limits<float>::infinity();
  }
  EXPECT_EQ(differing, 0u) << "a kept id's logit differs from the whole head's beyond float rounding";
  EXPECT_EQ(finite_dropped, 0u) << "an id outside the kept ones has a logit other than -infinity";

  // The request's own ids beyond the kept ones (the fruit list is not in
  // the head's text): logits from their rows in f32, the whole head's but
  // for its activations' 8-bit terms.
  RequestVocabulary* own = (*kept_head)->request_vocabulary();
  ASSERT_NE(own, nullptr);
  const std::vector<int32_t> request = tokenizer.encode(kSpeculativePrompts[1]);
  ASSERT_TRUE(own->use(request).ok());
  auto own_logits = (*kept_head)->score(request);
  auto own_whole = (*whole_head)->score(request);
  ASSERT_TRUE(own_logits.ok() && own_whole.ok());
  size_t own_ids = 0, own_differing = 0;
  for (size_t row = 0; row < request.size(); ++row)
    for (int32_t id : request) {
      if (is_kept[static_cast<size_t>(id)]) continue;
      ++own_ids;
      const float got = (*own_logits)[row * vocab + id], whole = (*own_whole)[row * vocab + id];
      own_differing += !(std::abs(got - whole) <= 1e-3f * (1.0f + std::abs(whole)));
    }
  EXPECT_GT(own_ids, 0u) << "the prompt holds ids the head does not keep";
  EXPECT_EQ(own_differing, 0u) << "a request id's logit is not the whole head's";
}

// The draft proposes a token of the request's own that its head does not
// keep: the fruit list comes back, and its last fruit is nowhere in the text
// the head's 40 ids come from.
TEST(Speculative, ADraftProposesTheRequestsOwnTokensBeyondItsKeptHead) {
  if (!fs::exists(kModel)) TESSERA_MODEL_ABSENT(kModel.string() + " is absent: run scripts/fetch-model.sh");
  PluginRegistry& registry = test_registry();
  auto pipeline = load_pipeline(kPipelines / "quickstart.toml",
                                with({{"speculative", "method", "\"draft-model\""},
                                      {"speculative", "draft_model", kModel.string(), true},
                                      {"run", "threads", "2"}},
                                     keeping_vocabulary(40)),
                                registry);
  ASSERT_TRUE(pipeline.ok()) << pipeline.status().message();
  Pipeline whole_pipeline = *pipeline->draft;
  whole_pipeline.output_vocabulary_text.clear();
  auto whole_head = Session::open(whole_pipeline, registry);
  auto kept_head = Session::open(*pipeline->draft, registry);
  ASSERT_TRUE(whole_head.ok() && kept_head.ok());

  const tok::Tokenizer& tokenizer = (*whole_head)->tokenizer();
  const std::vector<int32_t> tokens =
      tokenizer.encode("apples, pears, plums, cherries, figs, dates. apples, pears, plums, cherries, figs,");
  auto whole_logits = (*whole_head)->score(tokens);
  ASSERT_TRUE(whole_logits.ok());
  const size_t vocab = static_cast<size_t>((*whole_head)->model().vocab_size());
  const std::span<const float> last(whole_logits->data() + (tokens.size() - 1) * vocab, vocab);
  const auto next = static_cast<int32_t>(std::max_element(last.begin(), last.end()) - last.begin());
  auto kept = most_used_tokens_in_file(tokenizer, draft_vocabulary_text(), 40);
  ASSERT_TRUE(kept.ok());
  ASSERT_FALSE(std::binary_search(kept->begin(), kept->end(), next))
      << "the case needs a next token outside the kept ids: " << tokenizer.token_to_piece(next);
  ASSERT_NE(std::find(tokens.begin(), tokens.end(), next), tokens.end()) << "and inside the request";

  DraftModel draft(std::move(kept_head).value(), 0.0);
  std::vector<int32_t> out;
  std::vector<double> forward_ms;
  ASSERT_TRUE(draft.draft(0, tokens, 1, out, forward_ms).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], next) << "drafted '" << tokenizer.token_to_piece(out[0]) << "', the whole head's choice is '"
                          << tokenizer.token_to_piece(next) << "'";
}

TEST(Speculative, TheDraftVocabularyKeepsTheTextsTokensAndTheMostUsedFirst) {
  TESSERA_OPEN_OR_SKIP(target, (Overrides{}));
  const tok::Tokenizer& tokenizer = target->tokenizer();
  const std::string text = "cat cat cat cat dog bird";  // " cat" three times, each other token once
  const std::vector<int32_t> ids = tokenizer.encode(text, false, false);
  const auto all = most_used_tokens(tokenizer, text, 1000);
  for (int32_t id : ids) EXPECT_TRUE(std::binary_search(all.begin(), all.end(), id)) << id;
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
  const auto one = most_used_tokens(tokenizer, text, 1);
  const int32_t cat = tokenizer.encode(" cat", false, false).at(0);
  const int32_t bird = tokenizer.encode(" bird", false, false).at(0);
  EXPECT_TRUE(std::binary_search(one.begin(), one.end(), cat)) << "' cat' is the most used";
  EXPECT_FALSE(std::binary_search(one.begin(), one.end(), bird));
  EXPECT_EQ(most_used_tokens(tokenizer, text, tokenizer.vocab_size()).size(),
            static_cast<size_t>(tokenizer.vocab_size()));
  // Past the text's own tokens, the vocabulary's first ids fill the head.
  std::vector<int32_t> distinct = ids;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  const auto filled = most_used_tokens(tokenizer, text, static_cast<int64_t>(distinct.size()) + 5);
  std::vector<int32_t> first_others;
  for (int32_t id = 0; first_others.size() < 5; ++id)
    if (!std::binary_search(distinct.begin(), distinct.end(), id)) first_others.push_back(id);
  for (int32_t id : first_others) EXPECT_TRUE(std::binary_search(filled.begin(), filled.end(), id)) << id;
  const int32_t sixth = [&] {
    for (int32_t id = first_others.back() + 1;; ++id)
      if (!std::binary_search(distinct.begin(), distinct.end(), id)) return id;
  }();
  const tok::TokenType sixth_type = tokenizer.token_type(sixth);
  if (sixth_type != tok::TokenType::control && sixth_type != tok::TokenType::user_defined) {
    EXPECT_FALSE(std::binary_search(filled.begin(), filled.end(), sixth)) << sixth;
  }
}

}  // namespace
}  // namespace tessera::test
