// Greedy ids against two independent engines on the same GGUF file, fed the
// same prompt ids, 64 greedy steps; each table holds the engine's ids and its
// top-1 minus top-2 logit margin at each step.
//
// 1. llama.cpp (the copy vendored in llama-cpp-python 0.3.36, CPU, 2 threads,
//    default context settings: f16 KV cache, flash attention). llama.cpp
//    quantizes activations to 8 bits per block of 32 before its integer dot
//    products, which moves its logits by up to a few tenths on this model:
//    its f32-KV configuration parts from its own default at margins up to
//    0.148, its AVX2 build from its native one at up to 0.248, and it parts
//    from exact arithmetic at up to 0.249 (docs/transformer.md). Both
//    Tessera's default (two 8-bit terms per activation block, which follows
//    exact arithmetic) and its activations = "q8" (llama.cpp's arithmetic)
//    must match it up to the first step whose margin is below kNearTie;
//    after a parting nothing more can be compared.
// 2. tools/f32-reference (NumPy, float64, every weight dequantized): exact
//    arithmetic on the stored weights. Hugging Face transformers (float32,
//    tools/hf-reference) gives the same ids at every step of the 24 prompts. pipelines/exact.toml ([quant]
//    activations = "f32") differs from it only by f32 rounding and may part
//    only below kExactNearTie; the default pipeline, whose activations keep
//    about 1/64000 of their largest value as error, only below
//    kDefaultNearTie. Over the 24 prompts (the 8 above and 16 more) neither
//    parts at all at the time of writing.
#include <cstdlib>
#include <limits>

#include "tessera/isa.hpp"
#include "golden_table.hpp"
#include "model_fixture.hpp"

namespace tessera::test {
namespace {

namespace llama_cpp {
#include "golden_ids.inc"
}
namespace f32_reference {
#include "golden_f32_ids.inc"
}

constexpr float kNearTie = 0.25f;
constexpr float kDefaultNearTie = 0.01f;
constexpr float kExactNearTie = 0.002f;

// Floors on the steps identical to the engine over a whole table, so that a
// regression that parts early, even at a near-tie, cannot pass. Measured
// 2026-12-01 (AMD EPYC Zen 3, AVX2): the default and exact pipelines follow
// the f32 reference at all 1226 steps; the default follows llama.cpp for 144
// of its 500. The floors leave room for one prompt parting at a tie.
constexpr size_t kF32ReferenceFloor = 1190;
constexpr size_t kLlamaCppFloor = 110;

// Checks every prompt of `table` and sets *matched to how many steps, over
// all of them, were identical to the engine's (each prompt's count ends
// where the two part, which must be at a near-tie). With check = false the
// walk is only printed.
void expect_greedy_ids(Session& session, const std::vector<Golden>& table, float near_tie, const char* engine,
                       size_t* matched, bool check = true) {
  size_t total = 0, steps = 0;
  for (const Golden& g : table) {
    auto r = session.generate(greedy(g.prompt, 64, g.chat));
    ASSERT_TRUE(r.ok()) << r.status().message();
    const auto& ours = r->metrics.token_ids;
    size_t checked = 0;
    float parted_margin = -1.0f;  // the engine's margin where the two part, if they do
    for (size_t i = 0; i < g.ids.size(); ++i) {
      if (i >= ours.size()) {
        // We stopped: only at end of generation, where the engine's id must be an end token too.
        const bool engine_ended = session.tokenizer().is_end_of_generation(g.ids[i]);
        if (check) {
          EXPECT_TRUE(engine_ended) << g.prompt << " step " << i;
        }
        if (engine_ended) ++checked;
        break;
      }
      if (ours[i] != g.ids[i]) {
        if (check) {
          EXPECT_LT(g.margins[i], near_tie) << g.prompt << ": parted from " << engine << " at step " << i
                                          << " where its margin was " << g.margins[i];
        }
        parted_margin = g.margins[i];
        break;
      }
      ++checked;
    }
    std::printf("[golden] \"%s\": %zu of %zu steps identical to %s", g.prompt, checked, g.ids.size(), engine);
    if (parted_margin >= 0.0f) std::printf(" (parted where its top-2 margin was %.3f)", parted_margin);
    std::printf("\n");
    total += checked;
    steps += g.ids.size();
  }
  std::printf("[golden] %zu of %zu steps identical to %s\n", total, steps, engine);
  *matched = total;
}

TEST(Golden, GreedyIdsMatchLlamaCppUntilANearTie) {
  TESSERA_OPEN_OR_SKIP(session, (std::vector<PipelineOverride>{{"run", "context", "512"}}));
  size_t matched = 0;
  expect_greedy_ids(*session, llama_cpp::kGolden, kNearTie, "llama.cpp", &matched);
  EXPECT_GE(matched, kLlamaCppFloor);
}

// With llama.cpp's one 8-bit term per activation block, the ids follow the
// arithmetic to the last float: a different summation order (another SIMD
// width) flips some 8-bit roundings, and the logits move by up to ~1. The
// table was recorded with llama.cpp's AVX-512 build, whose order Tessera's
// AVX-512 kernels share. Measured 2026-12-01 on an AVX2-only Zen 3 at the
// table's first prompt, step 9: llama.cpp AVX-512 leads by 0.853 and its
// AVX2 build by 0.989, but Tessera's AVX2 path by -0.082 and its scalar path
// by +0.306; llama.cpp itself moves by up to 0.551 between its f16 and f32
// KV caches. So the table is checked where the arithmetic is the same, and
// elsewhere only printed. (The amx level runs avx512_vnni's kernels for
// every format but the K-quant prefill panels, which give the groups' bits.)
bool records_arithmetic_of_this_cpu() {
  return best_isa_level() == IsaLevel::avx512_vnni || best_isa_level() == IsaLevel::amx;
}

TEST(Golden, LlamaCppArithmeticMatchesLlamaCppUntilANearTie) {
  TESSERA_OPEN_OR_SKIP(session, (std::vector<PipelineOverride>{{"run", "context", "512"},
                                                                {"quant", "activations", "q8"}}));
  if (!records_arithmetic_of_this_cpu()) {
    size_t matched = 0;
    expect_greedy_ids(*session, llama_cpp::kGolden, kNearTie, "llama.cpp", &matched, /*check=*/false);
    GTEST_SKIP() << "the llama.cpp table was recorded with llama.cpp's AVX-512 VNNI build; this CPU runs Tessera's "
                    "8-bit arithmetic in another summation order (see the comment above), so its ids are printed, "
                    "not checked ("
                 << matched << " of the table's steps identical)";
  }
  size_t matched = 0;
  expect_greedy_ids(*session, llama_cpp::kGolden, kNearTie, "llama.cpp", &matched);
  EXPECT_GE(matched, kLlamaCppFloor);
}

TEST(Golden, DefaultPipelineFollowsTheF32ReferenceEngine) {
  TESSERA_OPEN_OR_SKIP(session, (std::vector<PipelineOverride>{{"run", "context", "512"}}));
  size_t matched = 0;
  expect_greedy_ids(*session, f32_reference::kGolden, kDefaultNearTie, "the f32 reference", &matched);
  EXPECT_GE(matched, kF32ReferenceFloor);
}

TEST(Golden, ExactArithmeticMatchesTheF32ReferenceEngine) {
  TESSERA_OPEN_PIPELINE_OR_SKIP(session, kPipelines / "exact.toml",
                                (std::vector<PipelineOverride>{{"run", "context", "512"}}));
  size_t matched = 0;
  expect_greedy_ids(*session, f32_reference::kGolden, kExactNearTie, "the f32 reference", &matched);
  EXPECT_GE(matched, kF32ReferenceFloor);
}

}  // namespace
}  // namespace tessera::test
