#include "server_metrics.hpp"

#include <gtest/gtest.h>

#include "engine/request.hpp"

namespace tessera::server {
namespace {

TEST(ServerMetrics, HistogramBucketsAreCumulative) {
  Histogram h({0.1, 1.0});
  h.observe(0.05);
  h.observe(0.1);  // le is inclusive
  h.observe(0.5);
  h.observe(7);
  std::string out;
  h.render(out, "x_seconds", "help");
  EXPECT_NE(out.find("# TYPE x_seconds histogram\n"), std::string::npos);
  EXPECT_NE(out.find("x_seconds_bucket{le=\"0.1\"} 2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_seconds_bucket{le=\"1\"} 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_seconds_bucket{le=\"+Inf\"} 4\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_seconds_count 4\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_seconds_sum 7.65\n"), std::string::npos) << out;
}

TEST(ServerMetrics, RendersEngineGaugesAndRequestFigures) {
  ServerMetrics m;
  RequestOutcome o;
  o.result.metrics.prompt_tokens = 10;
  o.result.metrics.generated_tokens = 5;
  o.result.metrics.ttft_ms = 50;
  o.result.metrics.decode_ms = 40;  // 10 ms per token after the first
  o.result.metrics.stop_reason = "max_tokens";
  m.record_finished(o, 5);
  o.result.metrics.stop_reason = "cancelled";
  m.record_finished(o, 5);
  m.record_response(200);
  m.record_response(429);
  EngineSnapshot e;
  e.running = 3;
  e.waiting = 2;
  e.kv_blocks_used = 10;
  e.kv_blocks_total = 64;
  e.preemptions = 1;
  const std::string out = m.render(e);
  for (const char* line : {"tessera_requests_running 3\n", "tessera_requests_waiting 2\n",
                           "tessera_kv_blocks_used 10\n", "tessera_kv_blocks_free 54\n",
                           "tessera_preemptions_total 1\n", "tessera_prompt_tokens_total 20\n",
                           "tessera_generation_tokens_total 10\n",
                           "tessera_request_finished_total{finish_reason=\"length\"} 1\n",
                           "tessera_request_finished_total{finish_reason=\"cancelled\"} 1\n",
                           "tessera_http_responses_total{code=\"429\"} 1\n",
                           "tessera_time_to_first_token_seconds_count 2\n",
                           "tessera_time_per_output_token_seconds_bucket{le=\"0.01\"} 2\n"}) {
    EXPECT_NE(out.find(line), std::string::npos) << "missing: " << line << "\n" << out;
  }
  // Every sample line belongs to a declared metric.
  std::istringstream lines(out);
  std::string line, declared;
  while (std::getline(lines, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      declared = line.substr(7, line.find(' ', 7) - 7);
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    EXPECT_EQ(line.rfind(declared, 0), 0u) << line << " after " << declared;
  }
}

}  // namespace
}  // namespace tessera::server
