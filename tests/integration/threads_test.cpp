// The engine runs a step on fewer threads while the cores are busy
// ([run] adapt_threads): the logits must not depend on how many threads ran
// the step. A decode past 192 keys, where the paged kernel splits each key
// range across threads (split-K), on a team of two and of one.
#include <gtest/gtest.h>

#include <omp.h>

#include <cstring>
#include <vector>

#include "model_fixture.hpp"

namespace tessera::test {
namespace {

// Prefill `prompt`, then decode `steps` tokens one at a time (fed from the
// prompt again, so both runs see the same tokens); the decode logits.
std::vector<float> decode_logits(Session& session, const std::vector<int32_t>& prompt, size_t prefill, int team) {
  omp_set_num_threads(team);
  const auto vocab = static_cast<size_t>(session.vocab_size());
  std::vector<float> logits((prompt.size() - prefill) * vocab);
  auto seq = session.memory().create_sequence();
  EXPECT_TRUE(seq.ok()) << seq.status().message();
  if (!seq.ok()) return {};
  std::vector<float> last(vocab);
  EXPECT_TRUE(session.extend(*seq, std::span(prompt).first(prefill), 0, false, last.data()).ok());
  for (size_t i = prefill; i < prompt.size(); ++i) {
    const Status s = session.extend(*seq, std::span(prompt).subspan(i, 1), static_cast<int32_t>(i), false,
                                    logits.data() + (i - prefill) * vocab);
    EXPECT_TRUE(s.ok()) << s.message();
  }
  session.memory().release(*seq);
  return logits;
}

TEST(Threads, LogitsDoNotDependOnTheStepsTeam) {
  TESSERA_OPEN_OR_SKIP(session, (std::vector<PipelineOverride>{{"run", "adapt_threads", "false"}}));
  std::vector<int32_t> prompt;
  for (int32_t i = 0; i < 300; ++i) prompt.push_back(100 + (i * 7919) % 20000);
  const auto two = decode_logits(*session, prompt, 280, 2);
  const auto one = decode_logits(*session, prompt, 280, 1);
  omp_set_num_threads(session->threads());
  ASSERT_EQ(two.size(), one.size());
  ASSERT_FALSE(two.empty());
  EXPECT_EQ(std::memcmp(two.data(), one.data(), two.size() * sizeof(float)), 0)
      << "20 decode steps past 280 tokens gave other logits on one thread than on two";
}

}  // namespace
}  // namespace tessera::test
