// Greedy ids against an independent engine: llama.cpp (b-version vendored in
// llama-cpp-python 0.3.36, CPU, 2 threads, default context settings) on the
// same GGUF file, fed the same prompt ids, 64 greedy steps. The expected ids
// and llama.cpp's top-1 minus top-2 logit margin at each step are below.
//
// Two engines computing in different precisions (llama.cpp: f16 KV cache and
// f16 attention accumulators; Tessera: f32) can part where the top two logits
// are close. The test demands identical ids up to the first step whose margin
// is below kNearTie; after a parting nothing more can be compared.
#include "model_fixture.hpp"

namespace tessera::test {
namespace {

constexpr float kNearTie = 0.25f;

struct Golden {
  const char* prompt;
  bool chat;
  std::vector<int32_t> ids;
  std::vector<float> margins;
};

#include "golden_ids.inc"

TEST(Golden, GreedyIdsMatchLlamaCppUntilANearTie) {
  TESSERA_OPEN_OR_SKIP(session, (std::vector<PipelineOverride>{{"run", "context", "512"}}));
  for (const Golden& g : kGolden) {
    auto r = session->generate(greedy(g.prompt, 64, g.chat));
    ASSERT_TRUE(r.ok()) << r.status().message();
    const auto& ours = r->metrics.token_ids;
    size_t checked = 0;
    float parted_margin = -1.0f;  // llama.cpp's margin where the two part, if they do
    for (size_t i = 0; i < g.ids.size(); ++i) {
      if (i >= ours.size()) {
        // We stopped: only at end of generation, where llama.cpp's id must be an end token too.
        EXPECT_TRUE(session->tokenizer().is_end_of_generation(g.ids[i])) << g.prompt << " step " << i;
        break;
      }
      if (ours[i] != g.ids[i]) {
        EXPECT_LT(g.margins[i], kNearTie) << g.prompt << ": parted from llama.cpp at step " << i
                                          << " where its margin was " << g.margins[i];
        parted_margin = g.margins[i];
        break;
      }
      ++checked;
    }
    std::printf("[golden] \"%s\": %zu of %zu steps identical to llama.cpp", g.prompt, checked, g.ids.size());
    if (parted_margin >= 0.0f) std::printf(" (parted where llama.cpp's top-2 margin was %.3f)", parted_margin);
    std::printf("\n");
  }
}

}  // namespace
}  // namespace tessera::test
