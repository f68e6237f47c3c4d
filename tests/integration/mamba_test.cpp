// Mamba-1 and Mamba-2 on real trained weights (tests/data/mamba, made by
// tools/mamba-train), checked against Hugging Face transformers' float32
// outputs recorded beside them: logits at every position of held-out text,
// greedy ids of 8 prompts; and against Tessera itself: batched and chunked
// runs give the ids of single runs, and speculative decoding on a Mamba
// target (rolled back through checkpoints) keeps the target's ids.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "engine/quantize_model.hpp"
#include "engine/scheduler.hpp"
#include "model/gguf_writer.hpp"
#include "model/model_file.hpp"
#include "model_fixture.hpp"
#include "tessera/half.hpp"
#include "support/scratch_dir.hpp"

namespace tessera::test {
namespace {

namespace fs = std::filesystem;
using Overrides = std::vector<PipelineOverride>;

const fs::path kData = fs::path(TESSERA_SOURCE_DIR) / "tests" / "data" / "mamba";
constexpr int64_t kGreedySteps = 64;

std::vector<double> numbers_after(const std::string& line, const std::string& label) {
  EXPECT_EQ(line.rfind(label, 0), 0u) << "expected '" << label << "' in: " << line.substr(0, 40);
  std::istringstream in(line.substr(label.size()));
  std::vector<double> v;
  for (double x; in >> x;) v.push_back(x);
  return v;
}

std::vector<int32_t> ids_of(const std::vector<double>& v) { return {v.begin(), v.end()}; }

struct GreedyCase {
  std::vector<int32_t> prompt, ids;
  std::vector<double> margins;  // transformers' top-1 minus top-2 logit at each step
};

std::vector<GreedyCase> read_greedy(const fs::path& file) {
  std::ifstream in(file);
  EXPECT_TRUE(in) << file;
  std::vector<GreedyCase> cases;
  for (std::string p, g, m; std::getline(in, p) && std::getline(in, g) && std::getline(in, m);)
    cases.push_back({ids_of(numbers_after(p, "prompt:")), ids_of(numbers_after(g, "greedy:")),
                     numbers_after(m, "margin:")});
  return cases;
}

// A Mamba session on model `name` (a file or folder under kData).
std::unique_ptr<Session> open_mamba(const std::string& name, Overrides overrides = {}) {
  const fs::path model = kData / name;
  EXPECT_TRUE(fs::exists(model)) << model << " is missing: it is checked in (tools/mamba-train makes it)";
  overrides.push_back({"model", "path", model.string(), /*verbatim=*/true});
  return open_session(kPipelines / "mamba.toml", std::move(overrides));
}

GenerationRequest greedy_ids(const std::vector<int32_t>& prompt, int64_t steps) {
  GenerationRequest r;
  r.token_ids = prompt;
  r.max_tokens = steps;
  r.ignore_eos = true;  // transformers' loop was not stopped at EOS either
  r.sampling.temperature = 0;
  return r;
}

// The requests run together through the scheduler, at most max_batch_tokens
// a step, generate the ids each generated alone (`alone`), and more than one
// ran at once.
void expect_scheduled_ids(Session& session, const std::vector<GenerationRequest>& requests, int32_t max_batch_tokens,
                          const std::vector<std::vector<int32_t>>& alone) {
  SchedulerConfig config;
  config.max_batch_tokens = max_batch_tokens;
  Scheduler scheduler(session, config);
  for (const auto& r : requests) scheduler.submit(r);
  auto out = scheduler.run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out->size(), alone.size());
  for (size_t i = 0; i < alone.size(); ++i) {
    ASSERT_TRUE((*out)[i].status.ok()) << (*out)[i].status.message();
    EXPECT_EQ((*out)[i].result.metrics.token_ids, alone[i]) << "request " << i;
  }
  EXPECT_GT(scheduler.stats().max_running, 1);
}

class MambaModels : public ::testing::TestWithParam<std::string> {
 protected:
  // "mamba1" or "mamba2": the GGUF llama.cpp's converter wrote.
  std::string gguf() const { return GetParam() + ".f32.gguf"; }
  // The held-out text's ids (128) that transformers' logits were recorded on.
  std::vector<int32_t> heldout_ids() const {
    std::ifstream in(kData / (GetParam() + ".heldout.txt"));
    std::vector<int32_t> ids;
    for (int32_t id; in >> id;) ids.push_back(id);
    return ids;
  }
};

// The GGUF llama.cpp's converter wrote and the Hugging Face folder itself.
TEST_P(MambaModels, LogitsFollowTransformersAtEveryPosition) {
  const std::vector<int32_t> ids = heldout_ids();
  ASSERT_FALSE(ids.empty());
  for (const std::string& model : {gguf(), GetParam() + "-hf"}) {
    auto session = open_mamba(model);
    ASSERT_NE(session, nullptr);
    const auto vocab = static_cast<size_t>(session->vocab_size());
    std::vector<float> expected(ids.size() * vocab);
    std::ifstream logits_file(kData / (GetParam() + ".heldout.logits.f32"), std::ios::binary);
    logits_file.read(reinterpret_cast<char*>(expected.data()), static_cast<std::streamsize>(expected.size() * 4));
    ASSERT_EQ(logits_file.gcount(), static_cast<std::streamsize>(expected.size() * 4));

    auto logits = session->score(ids);
    ASSERT_TRUE(logits.ok()) << logits.status().message();
    double worst = 0;
    for (size_t t = 0; t < ids.size(); ++t) {
      double diff = 0, scale = 0;
      for (size_t v = 0; v < vocab; ++v) {
        diff = std::max(diff, std::abs(static_cast<double>((*logits)[t * vocab + v]) - expected[t * vocab + v]));
        scale = std::max(scale, std::abs(static_cast<double>(expected[t * vocab + v])));
      }
      worst = std::max(worst, diff / scale);
      EXPECT_LT(diff / scale, 1e-5) << model << ", position " << t;  // the issue asks 1e-3; worst seen 9.4e-7
    }
    std::printf("%s: largest relative logit difference from transformers over %zu positions: %.2e\n", model.c_str(),
                ids.size(), worst);
  }
}

// The folder's tokenizer.json (transformers' conversion of the SentencePiece
// model) and the GGUF's SentencePiece vocabulary (llama.cpp's) give the ids
// the sentencepiece library gave when the test data was made.
TEST_P(MambaModels, BothTokenizersGiveSentencePiecesIds) {
  const std::string text = "And God said unto Moses, 1234 \xc3\xa9 x";
  const std::vector<int32_t> expected = {1, 300, 400, 387, 322, 676, 2001, 1986, 52, 53, 54, 55, 1986, 198, 172, 1986, 2036};
  for (const std::string& model : {gguf(), GetParam() + "-hf"}) {
    auto session = open_mamba(model);
    ASSERT_NE(session, nullptr);
    GenerationRequest r;
    r.prompt = text;
    auto ids = session->prompt_ids(r);
    ASSERT_TRUE(ids.ok()) << ids.status().message();
    EXPECT_EQ(*ids, expected) << model;
  }
}

TEST_P(MambaModels, GreedyIdsAreTransformersExceptAtNearTies) {
  auto session = open_mamba(gguf());
  ASSERT_NE(session, nullptr);
  const auto cases = read_greedy(kData / (GetParam() + ".greedy.txt"));
  ASSERT_EQ(cases.size(), 8u);
  int identical = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    auto r = session->generate(greedy_ids(cases[i].prompt, kGreedySteps));
    ASSERT_TRUE(r.ok()) << r.status().message();
    const auto& ours = r->metrics.token_ids;
    ASSERT_EQ(ours.size(), cases[i].ids.size());
    const auto part = std::mismatch(ours.begin(), ours.end(), cases[i].ids.begin()).first - ours.begin();
    if (part == static_cast<ptrdiff_t>(ours.size())) {
      ++identical;
      continue;
    }
    // Parting is allowed only where transformers' own top two were a near-tie.
    const double margin = cases[i].margins[static_cast<size_t>(part)];
    std::printf("%s prompt %zu parts at step %td, transformers' margin %.5f\n", GetParam().c_str(), i, part, margin);
    EXPECT_LT(margin, 1e-3) << "prompt " << i << " parts at step " << part;
  }
  std::printf("%s: %d of 8 prompts identical to transformers for %lld tokens\n", GetParam().c_str(), identical,
              static_cast<long long>(kGreedySteps));
}

// Every request alone, then all together with prompts arriving in chunks of
// 5 tokens beside running decodes: the same ids.
TEST_P(MambaModels, BatchedAndChunkedRequestsGiveTheIdsOfSingleOnes) {
  auto session = open_mamba(gguf(), {{"kvcache", "max_sequences", "8"}});
  ASSERT_NE(session, nullptr);
  const auto cases = read_greedy(kData / (GetParam() + ".greedy.txt"));
  std::vector<std::vector<int32_t>> alone;
  for (const auto& c : cases) {
    auto r = session->generate(greedy_ids(c.prompt, 24));
    ASSERT_TRUE(r.ok()) << r.status().message();
    alone.push_back(r->metrics.token_ids);
  }
  std::vector<GenerationRequest> requests;
  for (const auto& c : cases) requests.push_back(greedy_ids(c.prompt, 24));
  expect_scheduled_ids(*session, requests, 5, alone);
}

// forward() itself, to the bit: a sequence's logits are the same alone,
// beside another sequence placed before it in the batch (so its rows sit
// elsewhere and its slices may fall to other threads), and over its tokens
// in two chunks (the state carried between forwards).
TEST_P(MambaModels, ForwardLogitsAreBitIdenticalAloneBesideAnotherAndInChunks) {
  auto session = open_mamba(gguf(), {{"kvcache", "max_sequences", "4"}});
  ASSERT_NE(session, nullptr);
  Model& model = session->model();
  SequenceMemory& memory = session->memory();
  const auto vocab = model.vocab_size();
  const std::vector<int32_t> text = heldout_ids();
  ASSERT_GE(text.size(), 40u);
  const std::vector<TokenId> tokens(text.begin(), text.begin() + 24), other(text.begin() + 24, text.begin() + 40);
  const auto n = static_cast<int32_t>(tokens.size()), m = static_cast<int32_t>(other.size());

  // Runs the batch of `parts` (sequence, tokens, n_past, n_logits) and returns its logits.
  struct Part {
    SeqId seq;
    std::vector<TokenId> tokens;
    int32_t n_past, n_logits;
  };
  const auto forward = [&](const std::vector<Part>& parts) {
    std::vector<TokenId> ids;
    std::vector<BatchSeq> seqs;
    for (const Part& p : parts) {
      seqs.push_back({p.seq, static_cast<int32_t>(ids.size()), static_cast<int32_t>(p.tokens.size()), p.n_past,
                      p.n_logits});
      ids.insert(ids.end(), p.tokens.begin(), p.tokens.end());
      EXPECT_TRUE(memory.append_slots(p.seq, static_cast<int32_t>(p.tokens.size())).ok());
    }
    const Batch batch{ids, seqs};
    std::vector<float> logits(static_cast<size_t>(batch.logit_rows() * vocab));
    const Status st = model.forward(batch, memory, logits.data());
    EXPECT_TRUE(st.ok()) << st.message();
    return logits;
  };
  const auto fresh = [&] {
    auto seq = memory.create_sequence();
    EXPECT_TRUE(seq.ok()) << seq.status().message();
    return seq.ok() ? *seq : SeqId{};
  };
  const auto row = [&](const std::vector<float>& logits, int64_t r) {
    return std::vector<float>(logits.begin() + r * vocab, logits.begin() + (r + 1) * vocab);
  };

  const SeqId a = fresh();
  const std::vector<float> alone = forward({{a, tokens, 0, n}});
  memory.release(a);

  const SeqId b = fresh(), c = fresh();
  const std::vector<float> beside = forward({{b, other, 0, m}, {c, tokens, 0, n}});
  memory.release(b);
  memory.release(c);
  EXPECT_EQ(std::vector<float>(beside.begin() + m * vocab, beside.end()), alone);

  const SeqId d = fresh();
  const int32_t cut = 11;
  const std::vector<TokenId> head(tokens.begin(), tokens.begin() + cut), tail(tokens.begin() + cut, tokens.end());
  const std::vector<float> first = forward({{d, head, 0, 1}});
  const std::vector<float> second = forward({{d, tail, cut, n - cut}});
  memory.release(d);
  EXPECT_EQ(row(first, 0), row(alone, cut - 1));
  EXPECT_EQ(second, std::vector<float>(alone.begin() + cut * vocab, alone.end()));
}

// The logits after the last of `tokens`, run as a prompt through forward()
// in pieces ending at `cuts` (then at the end), on a fresh sequence.
std::vector<float> prompt_end_logits(Session& session, const std::vector<int32_t>& tokens,
                                     const std::vector<int32_t>& cuts = {}) {
  SequenceMemory& memory = session.memory();
  auto seq = memory.create_sequence();
  EXPECT_TRUE(seq.ok()) << seq.status().message();
  if (!seq.ok()) return {};
  std::vector<float> logits(static_cast<size_t>(session.model().vocab_size()));
  std::vector<int32_t> ends = cuts;
  ends.push_back(static_cast<int32_t>(tokens.size()));
  int32_t begin = 0;
  for (const int32_t end : ends) {
    const std::span<const TokenId> piece(tokens.data() + begin, static_cast<size_t>(end - begin));
    EXPECT_TRUE(memory.append_slots(*seq, end - begin).ok());
    const BatchSeq bs{*seq, 0, end - begin, begin, end == ends.back() ? 1 : 0};
    const Status st = session.model().forward(Batch{piece, std::span<const BatchSeq>(&bs, 1)}, memory, logits.data());
    EXPECT_TRUE(st.ok()) << st.message();
    begin = end;
  }
  memory.release(*seq);
  return logits;
}

// max |a - b| / max |b|
double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return diff / scale;
}

// Mamba-2 prompts take whole chunks of 64 positions through the chunked
// scan (SSD): the logits at a prompt's end follow transformers' as closely
// as the token-by-token scan's (which `[arch] chunked_scan = false` keeps
// everywhere) without being its bits, and a prompt split on a multiple of
// 64 gives the bits of the prompt run whole (the engine splits prompts there:
// kPromptSplitAlignment).
TEST(Mamba2ChunkedScan, PromptEndLogitsFollowTransformersAndSplitsOnChunksKeepTheirBits) {
  auto chunked = open_mamba("mamba2.f32.gguf");
  auto scanned = open_mamba("mamba2.f32.gguf", {{"model", "arch", "\"mamba\""}, {"arch", "chunked_scan", "false"}});
  ASSERT_NE(chunked, nullptr);
  ASSERT_NE(scanned, nullptr);
  std::vector<int32_t> text;
  {
    std::ifstream in(kData / "mamba2.heldout.txt");
    for (int32_t id; in >> id;) text.push_back(id);
  }
  ASSERT_EQ(text.size(), 128u);
  const auto vocab = static_cast<size_t>(chunked->vocab_size());
  std::vector<float> expected(text.size() * vocab);  // transformers', at every position
  std::ifstream logits_file(kData / "mamba2.heldout.logits.f32", std::ios::binary);
  logits_file.read(reinterpret_cast<char*>(expected.data()), static_cast<std::streamsize>(expected.size() * 4));
  ASSERT_EQ(logits_file.gcount(), static_cast<std::streamsize>(expected.size() * 4));

  // 64 and 128 tokens: one and two whole chunks; 100: a chunk and 36 scanned.
  for (const size_t n : {size_t{64}, size_t{100}, size_t{128}}) {
    const std::vector<int32_t> prompt(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(n));
    const std::vector<float> reference(expected.begin() + static_cast<std::ptrdiff_t>((n - 1) * vocab),
                                       expected.begin() + static_cast<std::ptrdiff_t>(n * vocab));
    const std::vector<float> by_chunks = prompt_end_logits(*chunked, prompt);
    const std::vector<float> by_scan = prompt_end_logits(*scanned, prompt);
    const double chunked_error = relative_difference(by_chunks, reference);
    const double scan_error = relative_difference(by_scan, reference);
    EXPECT_LT(chunked_error, 1e-5) << n << " tokens";  // the issue asks 1e-3, as for the scan
    EXPECT_LT(scan_error, 1e-5) << n << " tokens";
    EXPECT_NE(by_chunks, by_scan) << n << " tokens: the chunked scan did not run (or summed as the scan does)";
    std::printf("%zu-token prompt: relative difference from transformers at its end: chunked %.2e, scan %.2e\n", n,
                chunked_error, scan_error);
  }
  EXPECT_EQ(prompt_end_logits(*chunked, text, {64}), prompt_end_logits(*chunked, text));
  // A cut inside a chunk scans that chunk's tokens instead (other bits, the same accuracy).
  const std::vector<float> last(expected.end() - static_cast<std::ptrdiff_t>(vocab), expected.end());
  EXPECT_LT(relative_difference(prompt_end_logits(*chunked, text, {96}), last), 1e-5);
  EXPECT_EQ(prompt_end_logits(*scanned, text, {37, 101}), prompt_end_logits(*scanned, text))
      << "the scan alone keeps its bits wherever a prompt is split";
}

// Requests beside others, their 100-token prompts split by a step budget
// of 90 tokens (cut back to end on multiples of 64), generate the ids they
// generate alone, chunked scan included.
TEST(Mamba2ChunkedScan, BatchedRequestsWithSplitPromptsGiveTheIdsOfSingleOnes) {
  auto session = open_mamba("mamba2.f32.gguf", {{"kvcache", "max_sequences", "4"}});
  ASSERT_NE(session, nullptr);
  std::vector<int32_t> text;
  {
    std::ifstream in(kData / "mamba2.heldout.txt");
    for (int32_t id; in >> id;) text.push_back(id);
  }
  ASSERT_EQ(text.size(), 128u);
  std::vector<std::vector<int32_t>> prompts;
  for (const int offset : {0, 10, 28}) prompts.emplace_back(text.begin() + offset, text.begin() + offset + 100);
  std::vector<std::vector<int32_t>> alone;
  for (const auto& p : prompts) {
    auto r = session->generate(greedy_ids(p, 16));
    ASSERT_TRUE(r.ok()) << r.status().message();
    alone.push_back(r->metrics.token_ids);
  }
  std::vector<GenerationRequest> requests;
  for (const auto& p : prompts) requests.push_back(greedy_ids(p, 16));
  expect_scheduled_ids(*session, requests, 90, alone);
}

// The prefix cache of a recurrent model: a prompt that starts with an
// earlier sequence's tokens (a conversation's next turn) continues from the
// state snapshot kept there (every 16 tokens here), computing only the rest,
// and generates the ids it generates with no snapshots at all.
TEST_P(MambaModels, APromptSharingAnEarlierOnesStartReusesItsStateSnapshot) {
  const std::vector<int32_t> text = heldout_ids();
  ASSERT_GE(text.size(), 40u);
  auto cached = open_mamba(gguf(), {{"kvcache", "prefix_snapshots", "4"}, {"kvcache", "snapshot_interval", "16"}});
  auto uncached = open_mamba(gguf(), {{"kvcache", "prefix_snapshots", "0"}});
  ASSERT_NE(cached, nullptr);
  ASSERT_NE(uncached, nullptr);
  const auto both = [&](const std::vector<int32_t>& prompt) {
    auto a = cached->generate(greedy_ids(prompt, 16));
    auto b = uncached->generate(greedy_ids(prompt, 16));
    EXPECT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->metrics.token_ids, b->metrics.token_ids);
    return a.ok() ? a->metrics.token_ids : std::vector<int32_t>{};
  };
  // 30 tokens are prefilled as 16 (a chunk ends on a multiple of 16) and 14;
  // decoding then passes 32: snapshots at 16 and 32.
  std::vector<int32_t> turn(text.begin(), text.begin() + 30);
  const std::vector<int32_t> reply = both(turn);
  ASSERT_EQ(reply.size(), 16u);
  EXPECT_EQ(cached->memory().stats().prefix_hit_tokens, 0);
  // The next turn: the first, the reply (15 of its tokens were computed), more text.
  turn.insert(turn.end(), reply.begin(), reply.end());
  turn.insert(turn.end(), text.begin() + 30, text.begin() + 36);
  both(turn);
  EXPECT_EQ(cached->memory().stats().prefix_hit_tokens, 32);
  EXPECT_EQ(uncached->memory().stats().prefix_hit_tokens, 0);
}

// `tessera quantize` calibrates a Mamba layer by layer over stored inputs
// (Model ABI 3.6) and writes the bytes whole forwards write: the scan's state
// per sequence runs through each layer alone as it does in a whole forward,
// and each true-sequential stage's pass ends at the next stage's Linear.
// Mamba-1's dt projection (256 x 8) has rows shorter than a Q8_0 block: it
// stays f32, named in the report, and the file runs.
TEST_P(MambaModels, GptqCalibratedLayerByLayerWritesWhatWholeForwardsWrite) {
  const fs::path dir = scratch_dir("tessera_integration_test") / fmt::format("tessera_mamba_quantize_{}", ::getpid());
  fs::create_directories(dir);
  std::ifstream readme(kData / "README.md");  // English the models' tokenizer reads
  std::string text((std::istreambuf_iterator<char>(readme)), std::istreambuf_iterator<char>());
  QuantizeJob job;
  job.input = (kData / gguf()).string();
  job.output = (dir / "layered.gguf").string();
  job.spec.method = "gptq";
  job.spec.format = "ggml.q8_0";
  job.spec.bits = 8;
  job.calibration_text = text;
  job.samples = 2;
  job.sample_tokens = 64;
  job.threads = 2;
  job.force = true;
  // The layer at once, then in true-sequential stages (in, x, and dt where
  // it fits, out); the file of the stages is the one checked below.
  Result<QuantizeReport> layered = Internal("not run");
  for (const bool sequential : {false, true}) {
    SCOPED_TRACE(sequential ? "true sequential" : "at once");
    job.true_sequential = sequential;
    layered = quantize_model(job, test_registry());
    ASSERT_TRUE(layered.ok()) << layered.status().message();
    EXPECT_TRUE(layered->layer_by_layer);
    EXPECT_EQ(layered->true_sequential, sequential);
    QuantizeJob whole = job;
    whole.output = (dir / "whole.gguf").string();
    whole.layer_by_layer = false;
    auto forwards = quantize_model(whole, test_registry());
    ASSERT_TRUE(forwards.ok()) << forwards.status().message();
    EXPECT_FALSE(forwards->layer_by_layer);
    EXPECT_FALSE(layered->weights.empty());
    for (const auto& w : layered->weights) EXPECT_EQ(w.calibration_rows, 128) << w.name;
    const std::string a = file_bytes(job.output), b = file_bytes(whole.output);
    EXPECT_FALSE(a.empty());
    EXPECT_TRUE(a == b) << "the files differ (" << a.size() << " and " << b.size() << " bytes)";
  }

  auto written = open_model(job.output);
  ASSERT_TRUE(written.ok()) << written.status().message();
  if (GetParam() == "mamba1") {
    ASSERT_EQ(layered->kept.size(), 4u);  // one dt projection a layer
    for (const auto& k : layered->kept) {
      EXPECT_NE(k.name.find(".ssm_dt."), std::string::npos) << k.name;
      EXPECT_EQ(k.cols, 8) << k.name;
      EXPECT_NE(k.why.find("not whole groups"), std::string::npos) << k.why;
      const TensorRef* t = (*written)->find(k.name);
      ASSERT_NE(t, nullptr) << k.name;
      EXPECT_EQ(t->dtype, DType::f32) << k.name;
    }
  } else {
    EXPECT_TRUE(layered->kept.empty());
  }
  auto session = open_mamba((dir / "layered.gguf").string());
  ASSERT_NE(session, nullptr);
  auto r = session->generate(greedy_ids(heldout_ids(), 8));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->metrics.token_ids.size(), 8u);
  fs::remove_all(dir);
}

// Greedy ids of the 8 prompts from the target alone and with speculative
// decoding set by `settings`: equal; some drafts kept and some rejected (so
// the rollback ran). Prints what `drafter` drafted.
void expect_speculation_keeps_ids(const std::string& model, const std::string& gguf, Overrides settings,
                                  const char* drafter) {
  settings.push_back({"speculative", "adaptive", "false"});
  settings.push_back({"speculative", "max_draft_tokens", "4"});
  auto plain = open_mamba(gguf);
  auto speculative = open_mamba(gguf, std::move(settings));
  ASSERT_NE(plain, nullptr);
  ASSERT_NE(speculative, nullptr);
  int64_t drafted = 0, accepted = 0;
  for (const auto& c : read_greedy(kData / (model + ".greedy.txt"))) {
    auto a = plain->generate(greedy_ids(c.prompt, kGreedySteps));
    auto b = speculative->generate(greedy_ids(c.prompt, kGreedySteps));
    ASSERT_TRUE(a.ok() && b.ok()) << (a.ok() ? b.status().message() : a.status().message());
    EXPECT_EQ(b->metrics.token_ids, a->metrics.token_ids);
    drafted += speculative->last_speculation().drafted_tokens;
    accepted += speculative->last_speculation().accepted_tokens;
  }
  std::printf("%s: %s drafted %lld tokens, %lld accepted\n", model.c_str(), drafter, static_cast<long long>(drafted),
              static_cast<long long>(accepted));
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, drafted);  // some rejected: the rollback ran
}

// Prompt lookup drafts from the text so far; the KJV text repeats itself, so
// drafts are both kept and rejected, and each rejection restores the state
// checkpointed before the draft.
TEST_P(MambaModels, SpeculativeDecodingOnAMambaTargetKeepsItsIds) {
  expect_speculation_keeps_ids(GetParam(), gguf(), {{"speculative", "method", "\"prompt-lookup\""}},
                               "prompt lookup");
}

// The other trained Mamba (same SentencePiece vocabulary, another block)
// drafts for this one: both the target's and the draft's states are rolled
// back through checkpoints when drafts are rejected.
TEST_P(MambaModels, ADraftModelOnAMambaTargetKeepsItsIds) {
  const std::string draft = (kData / ((GetParam() == "mamba1" ? "mamba2" : "mamba1") + std::string(".f32.gguf"))).string();
  expect_speculation_keeps_ids(GetParam(), gguf(),
                               {{"speculative", "method", "\"draft-model\""},
                                {"speculative", "draft_model", fmt::format("\"{}\"", draft)},
                                {"speculative", "draft_min_probability", "0"}},
                               "the draft model");
}

// A copy of a checked-in Hugging Face folder whose safetensors hold every
// f32 tensor as `dtype` ("F16" or "BF16"), or, with `as_f32`, as F32 values
// rounded to that type: the same numbers stored the two ways.
fs::path hf_copy_in(const std::string& folder, const std::string& dtype, bool as_f32) {
  const fs::path dir = scratch_dir("tessera_integration_test") /
                       fmt::format("tessera-mamba-{}-{}{}-{}", folder, dtype, as_f32 ? "-as-f32" : "", getpid());
  fs::remove_all(dir);
  fs::copy(kData / folder, dir, fs::copy_options::recursive);
  std::ifstream in(kData / folder / "model.safetensors", std::ios::binary);
  uint64_t header_bytes = 0;
  in.read(reinterpret_cast<char*>(&header_bytes), 8);
  std::string header_text(header_bytes, '\0');
  in.read(header_text.data(), static_cast<std::streamsize>(header_bytes));
  const nlohmann::json header = nlohmann::json::parse(header_text);
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto round = [&](float v) {
    return dtype == "F16" ? f16_to_f32(f32_to_f16(v)) : bf16_to_f32(f32_to_bf16(v));
  };
  nlohmann::json out_header = nlohmann::json::object();
  std::string out_data;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      out_header[name] = entry;
      continue;
    }
    EXPECT_EQ(entry["dtype"], "F32") << name;
    const auto begin = entry["data_offsets"][0].get<size_t>(), end = entry["data_offsets"][1].get<size_t>();
    std::vector<float> values((end - begin) / 4);
    std::memcpy(values.data(), data.data() + begin, end - begin);
    const size_t at = out_data.size();
    for (const float v : values) {
      if (as_f32) {
        const float r = round(v);
        out_data.append(reinterpret_cast<const char*>(&r), 4);
      } else {
        const uint16_t h = dtype == "F16" ? f32_to_f16(v) : f32_to_bf16(v);
        out_data.append(reinterpret_cast<const char*>(&h), 2);
      }
    }
    out_header[name] = {{"dtype", as_f32 ? "F32" : dtype}, {"shape", entry["shape"]},
                        {"data_offsets", {at, out_data.size()}}};
  }
  const std::string text = out_header.dump();
  const uint64_t text_bytes = text.size();
  std::ofstream out(dir / "model.safetensors", std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(&text_bytes), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.write(out_data.data(), static_cast<std::streamsize>(out_data.size()));
  return dir;
}

// Folders stored in f16 and bf16 (as transformers saves them with
// torch_dtype) run through the same code: their logits are those of the
// same values stored as f32, and stay near the f32 model's.
TEST_P(MambaModels, HalfPrecisionFoldersGiveTheirValuesLogits) {
  const std::vector<int32_t> heldout = heldout_ids();
  ASSERT_GE(heldout.size(), 48u);
  const std::vector<int32_t> ids(heldout.begin(), heldout.begin() + 48);
  const auto logits_of = [&](const fs::path& folder) {
    auto session = open_mamba(folder.string());
    EXPECT_NE(session, nullptr);
    auto logits = session ? session->score(ids) : Result<std::vector<float>>(Internal("no session"));
    EXPECT_TRUE(logits.ok()) << logits.status().message();
    return logits.ok() ? *logits : std::vector<float>{};
  };
  const auto relative = [](const std::vector<float>& a, const std::vector<float>& b) {
    double diff = 0, scale = 0;
    for (size_t i = 0; i < b.size() && i < a.size(); ++i) {
      diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
      scale = std::max(scale, std::abs(static_cast<double>(b[i])));
    }
    return a.size() == b.size() && scale > 0 ? diff / scale : 1.0;
  };
  const std::vector<float> full = logits_of(kData / (GetParam() + "-hf"));
  for (const std::string dtype : {"F16", "BF16"}) {
    const fs::path half = hf_copy_in(GetParam() + "-hf", dtype, false);
    const fs::path rounded = hf_copy_in(GetParam() + "-hf", dtype, true);
    const std::vector<float> from_half = logits_of(half), from_rounded = logits_of(rounded);
    const double same_values = relative(from_half, from_rounded), against_f32 = relative(from_half, full);
    std::printf("%s %s: logits %.1e from the same values in f32, %.1e from the f32 model\n", GetParam().c_str(),
                dtype.c_str(), same_values, against_f32);
    EXPECT_LT(same_values, 1e-5) << dtype;
    EXPECT_LT(against_f32, dtype == "F16" ? 1e-2 : 5e-2) << dtype;
    fs::remove_all(half);
    fs::remove_all(rounded);
  }
}

// A broken copy of a checked-in model: a tensor left out, a key set, or a
// tensor cut to the first half of its outermost dimension.
std::string open_error_of_copy(const std::string& name, const std::string& drop_tensor, const std::string& set_key,
                               const std::string& halve_tensor = "") {
  auto model = open_model((kData / name).string());
  EXPECT_TRUE(model.ok()) << model.status().message();
  if (!model.ok()) return {};
  GgufWriter writer;
  for (const auto& [key, value] : (*model)->gguf()->metadata())
    if (key != "general.alignment") writer.set(key, value);
  if (!set_key.empty()) writer.set_bool(set_key, true);
  for (const TensorRef& t : (*model)->tensors()) {
    if (t.name == drop_tensor) continue;
    std::vector<uint64_t> dims;  // GGUF order: innermost first
    for (int i = t.ndim - 1; i >= 0; --i) dims.push_back(static_cast<uint64_t>(t.shape[i]));
    size_t bytes = t.nbytes;
    if (t.name == halve_tensor) dims.back() /= 2, bytes /= 2;
    EXPECT_TRUE(writer.add_tensor(t.name, t.dtype, dims, {static_cast<const std::byte*>(t.data), bytes}).ok());
  }
  const fs::path file = scratch_dir("tessera_integration_test") / fmt::format("tessera-mamba-broken-{}.gguf", getpid());
  EXPECT_TRUE(writer.write(file.string()).ok());
  auto pipeline = load_pipeline(kPipelines / "mamba.toml", {{"model", "path", file.string(), true}}, test_registry());
  EXPECT_TRUE(pipeline.ok()) << pipeline.status().message();
  auto session = Session::open(*pipeline, test_registry());
  fs::remove(file);
  return session.ok() ? std::string() : session.status().message();
}

TEST(MambaFiles, AMissingTensorIsNamed) {
  const std::string error = open_error_of_copy("mamba1.f32.gguf", "blk.1.ssm_a", "");
  EXPECT_NE(error.find("blk.1.ssm_a"), std::string::npos) << error;
  EXPECT_NE(error.find("missing"), std::string::npos) << error;
}

// A/D/dt_bias are checked by their number of values (llama.cpp stores
// Mamba-2's as [n_head, 1], transformers as [n_head]).
TEST(MambaFiles, ASmallTensorOfTheWrongSizeIsNamed) {
  for (const char* model : {"mamba1.f32.gguf", "mamba2.f32.gguf"}) {
    const std::string error = open_error_of_copy(model, "", "", "blk.2.ssm_d");
    EXPECT_NE(error.find("blk.2.ssm_d"), std::string::npos) << model << ": " << error;
    EXPECT_NE(error.find("the hyper-parameters imply"), std::string::npos) << model << ": " << error;
  }
}

TEST(MambaFiles, FalconMambaNormsAreRefusedByName) {
  const std::string error = open_error_of_copy("mamba1.f32.gguf", "", "mamba.ssm.dt_b_c_rms");
  EXPECT_NE(error.find("mamba.ssm.dt_b_c_rms"), std::string::npos) << error;
}

// A copy of a checked-in Hugging Face folder (in a folder named after `tag`)
// with keys of its config.json changed; a string value "@TOKEN" is written as
// the bare token (Python's json writes float("inf") as Infinity).
fs::path hf_copy_with_config(const std::string& name, const nlohmann::json& changes, const std::string& tag) {
  const fs::path dir = scratch_dir("tessera_integration_test") / fmt::format("tessera-mamba-{}-{}", tag, getpid());
  fs::remove_all(dir);
  fs::copy(kData / name, dir, fs::copy_options::recursive);
  nlohmann::json config;
  {
    std::ifstream in(dir / "config.json");
    in >> config;
  }
  config.update(changes);
  std::string text = config.dump(2);
  for (const char* token : {"Infinity", "NaN"}) {
    const std::string quoted = fmt::format("\"@{}\"", token);
    for (size_t at; (at = text.find(quoted)) != std::string::npos;) text.replace(at, quoted.size(), token);
  }
  std::ofstream(dir / "config.json") << text;
  return dir;
}

// The error a session on hf_copy_with_config(name, changes) opens with ("" if it opens).
std::string open_error_of_hf_copy(const std::string& name, const nlohmann::json& changes) {
  const fs::path dir = hf_copy_with_config(name, changes, "hf-broken");
  auto pipeline = load_pipeline(kPipelines / "mamba.toml", {{"model", "path", dir.string(), true}}, test_registry());
  EXPECT_TRUE(pipeline.ok()) << pipeline.status().message();
  std::string error;
  if (pipeline.ok()) {
    auto session = Session::open(*pipeline, test_registry());
    error = session.ok() ? std::string() : session.status().message();
  }
  fs::remove_all(dir);
  return error;
}

// Mamba2Config's time_step_limit, (0, inf) by default: transformers 4 saves it
// as [0.0, Infinity] (not strict JSON), transformers 5 as [0.0, {"__float__":
// "Infinity"}] (the checked-in folder). Both open and give the same logits;
// a real limit clamps dt after softplus (ssm_test.cpp checks the arithmetic),
// so it changes them; a limit that is no interval is refused by name.
TEST(MambaFiles, Mamba2TimeStepLimitIsReadInBothSpellingsAndApplied) {
  std::ifstream heldout(kData / "mamba2.heldout.txt");
  std::vector<int32_t> ids;
  for (int32_t id; ids.size() < 32 && heldout >> id;) ids.push_back(id);
  ASSERT_EQ(ids.size(), 32u);
  const auto logits_of = [&](const fs::path& folder) {
    auto session = open_mamba(folder.string());
    EXPECT_NE(session, nullptr) << folder;
    auto logits = session ? session->score(ids) : Result<std::vector<float>>(Internal("no session"));
    EXPECT_TRUE(logits.ok()) << logits.status().message();
    return logits.ok() ? *logits : std::vector<float>{};
  };
  const std::vector<float> checked_in = logits_of(kData / "mamba2-hf");
  ASSERT_FALSE(checked_in.empty());

  const fs::path python = hf_copy_with_config("mamba2-hf", {{"time_step_limit", {0.0, "@Infinity"}}}, "python-inf");
  {
    std::ifstream in(python / "config.json");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_NE(text.find("Infinity\n"), std::string::npos) << "the copy should hold a bare Infinity";
  }
  EXPECT_EQ(logits_of(python), checked_in);
  fs::remove_all(python);

  const fs::path clamped = hf_copy_with_config("mamba2-hf", {{"time_step_limit", {0.05, 0.1}}}, "clamped");
  const std::vector<float> limited = logits_of(clamped);
  fs::remove_all(clamped);
  ASSERT_EQ(limited.size(), checked_in.size());
  EXPECT_NE(limited, checked_in) << "a limit of [0.05, 0.1] changed no logit: is it applied?";

  for (const nlohmann::json& bad : {nlohmann::json{0.5, 0.1}, nlohmann::json{-1.0, 1.0}, nlohmann::json{0.1},
                                    nlohmann::json{"@NaN", 1.0}, nlohmann::json{0.0, "x"},
                                    nlohmann::json{0.0, {{"__float__", "1e9"}}}, nlohmann::json{{"low", 0.0}}}) {
    const std::string error = open_error_of_hf_copy("mamba2-hf", {{"time_step_limit", bad}});
    EXPECT_NE(error.find("time_step_limit"), std::string::npos) << bad.dump() << ": " << error;
  }
}

// Widths from a config.json are bounded before they are multiplied (expand *
// hidden_size, num_heads * head_dim): a product past 2^63 would be undefined
// (the sanitizer build would stop on it) and could wrap to a plausible width.
TEST(MambaFiles, HugeConfigWidthsAreRefusedBeforeAnyProduct) {
  constexpr int64_t kHuge = int64_t{1} << 40;
  const struct {
    const char* folder;
    nlohmann::json changes;
    const char* named;
  } cases[] = {
      {"mamba1-hf", {{"hidden_size", kHuge}, {"expand", kHuge}}, "hidden_size"},
      {"mamba1-hf", {{"expand", int64_t{1} << 62}}, "expand"},
      {"mamba2-hf", {{"num_heads", kHuge}, {"head_dim", kHuge}}, "num_heads"},
      {"mamba2-hf", {{"head_dim", kHuge}}, "head_dim"},
  };
  for (const auto& c : cases) {
    const std::string error = open_error_of_hf_copy(c.folder, c.changes);
    EXPECT_NE(error.find(c.named), std::string::npos) << c.folder << " " << c.changes.dump() << ": " << error;
    EXPECT_NE(error.find("beyond the supported"), std::string::npos) << error;
  }
}

INSTANTIATE_TEST_SUITE_P(TrainedModels, MambaModels, ::testing::Values("mamba1", "mamba2"));

}  // namespace
}  // namespace tessera::test
