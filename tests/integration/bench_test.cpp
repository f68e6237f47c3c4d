// `tessera bench` and `tessera bench --requests N` on the default model: every
// figure they report is measured (positive, ordered statistics), the weight
// bytes match the model, the JSON carries the same values, and work that does
// not fit the context is refused. Speeds themselves depend on the machine and
// are not judged here (benchmarks, not tests, measure them).
#include <cmath>
#include <string>

#include "engine/bench.hpp"
#include "model_fixture.hpp"

namespace tessera::test {
namespace {

void expect_ordered(const BenchStat& s, const char* name) {
  EXPECT_GT(s.min, 0.0) << name;
  EXPECT_LE(s.min, s.median) << name;
  EXPECT_LE(s.median, s.max) << name;
  EXPECT_GE(s.stddev, 0.0) << name;
  EXPECT_TRUE(std::isfinite(s.max)) << name;
}

TEST(Bench, ReportsEveryFigureAndTheRoofline) {
  TESSERA_OPEN_OR_SKIP(session, (std::vector<PipelineOverride>{{"run", "context", "512"}}));
  auto r = run_bench(*session, BenchConfig{.prompt_tokens = 16, .gen_tokens = 8, .repeat = 3});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->threads, 2);
  expect_ordered(r->prefill_tokens_per_s, "prefill");
  expect_ordered(r->decode_tokens_per_s, "decode");
  expect_ordered(r->ttft_ms, "ttft");
  // SmolLM2-135M Q4_1: 30 layers x 7 Q4_1 matrices plus the tied Q8_0 output: 96.4 MB per decode step.
  EXPECT_NEAR(static_cast<double>(r->weight_bytes), 96.4e6, 0.1e6);
  // Its f32 cache: 30 layers x K and V x 3 KV heads x 64 x 4 bytes = 46080 bytes per position, read for
  // 16 + 4.5 positions on average over 8 decode steps (positions 17 ... 24).
  EXPECT_EQ(r->kv_read_bytes, 46080u * 41 / 2);
  EXPECT_GT(r->read_bytes_per_s, 1e8);
  EXPECT_GT(r->plain_read_bytes_per_s, 1e8);
  EXPECT_LE(r->plain_read_bytes_per_s, r->read_bytes_per_s);
  EXPECT_GT(r->peak_rss_bytes, r->weight_bytes);  // the repacked weights are resident
  EXPECT_TRUE(r->thp_mode.empty() || r->thp_mode == "always" || r->thp_mode == "madvise" || r->thp_mode == "never")
      << r->thp_mode;
  if (r->thp_mode == "never") {
    EXPECT_EQ(r->huge_page_bytes, 0u);
  }

  const nlohmann::json j = r->to_json();
  EXPECT_EQ(j.at("prompt_tokens"), 16);
  EXPECT_EQ(j.at("gen_tokens"), 8);
  EXPECT_EQ(j.at("repeat"), 3);
  EXPECT_EQ(j.at("decode_tokens_per_s").at("median").get<double>(), r->decode_tokens_per_s.median);
  EXPECT_EQ(j.at("weight_bytes").get<uint64_t>(), r->weight_bytes);
  EXPECT_EQ(j.at("kv_read_bytes").get<uint64_t>(), r->kv_read_bytes);
  EXPECT_EQ(j.at("read_bytes_per_s").get<double>(), r->read_bytes_per_s);
  EXPECT_EQ(j.at("plain_read_bytes_per_s").get<double>(), r->plain_read_bytes_per_s);
  EXPECT_EQ(j.at("huge_page_bytes").get<uint64_t>(), r->huge_page_bytes);
  EXPECT_EQ(j.at("thp_mode").get<std::string>(), r->thp_mode);
}

TEST(Bench, PrefillOnlyMeasuresNoDecodeAndNoBandwidth) {
  TESSERA_OPEN_OR_SKIP(session, (std::vector<PipelineOverride>{{"run", "context", "512"}}));
  auto r = run_bench(*session, BenchConfig{.prompt_tokens = 64, .gen_tokens = 0, .repeat = 2});
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_ordered(r->prefill_tokens_per_s, "prefill");
  EXPECT_EQ(r->decode_tokens_per_s.median, 0.0);
  EXPECT_EQ(r->read_bytes_per_s, 0.0);
  EXPECT_EQ(r->plain_read_bytes_per_s, 0.0);
  EXPECT_EQ(r->kv_read_bytes, 0u);
}

TEST(Bench, RefusesWorkBeyondTheContext) {
  TESSERA_OPEN_OR_SKIP(session, (std::vector<PipelineOverride>{{"run", "context", "512"}}));
  BenchConfig config{.prompt_tokens = 500, .gen_tokens = 13};  // 513 > 512
  auto r = run_bench(*session, config);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::invalid_argument);
  EXPECT_NE(r.status().message().find("exceed the context of 512"), std::string::npos) << r.status().message();
  config.prompt_tokens = 0;
  EXPECT_EQ(run_bench(*session, config).status().code(), StatusCode::invalid_argument);
}

TEST(Bench, BatchWorkloadCompletesEveryRequest) {
  TESSERA_OPEN_OR_SKIP(session, (std::vector<PipelineOverride>{{"run", "context", "512"},
                                                               {"kvcache", "plugin", "paged"},
                                                               {"kvcache", "memory", "\"64MiB\""}}));
  auto r = run_batch_bench(
      *session, BatchBenchConfig{.requests = 4, .prompt_min = 8, .prompt_max = 24, .gen_min = 4, .gen_max = 8});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->completed, 4);
  EXPECT_EQ(r->failed, 0);
  EXPECT_GE(r->prompt_tokens, 4 * 8);
  EXPECT_LE(r->prompt_tokens, 4 * 24);
  EXPECT_GE(r->generated_tokens, 4 * 4);  // every request generates exactly its drawn length
  EXPECT_LE(r->generated_tokens, 4 * 8);
  EXPECT_GE(r->max_running, 2);  // submitted at once: they share steps
  EXPECT_LE(r->max_running, 4);
  EXPECT_GT(r->generated_tokens_per_s, 0.0);
  EXPECT_GT(r->decode_tokens_per_s, 0.0);
  EXPECT_GE(r->peak_kv_waste_percent, 0.0);
  EXPECT_LT(r->peak_kv_waste_percent, 100.0);
  expect_ordered(r->latency_ms, "latency");
  const nlohmann::json j = r->to_json();
  EXPECT_EQ(j.at("completed"), 4);
  EXPECT_EQ(j.at("generated_tokens").get<int64_t>(), r->generated_tokens);
}

}  // namespace
}  // namespace tessera::test
