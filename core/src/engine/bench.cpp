#include "engine/bench.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include "backend/cpu/huge_pages.hpp"
#include "backend/cpu/omp_wait.hpp"
#include "backend/cpu/read_bandwidth.hpp"
#include "engine/sample_statistics.hpp"
#include "engine/scheduler.hpp"
#include "tessera/argmax.hpp"

namespace tessera {

BenchStat BenchStat::of(std::vector<double> s) {
  BenchStat r;
  if (s.empty()) return r;
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  r.median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  r.mean = std::accumulate(s.begin(), s.end(), 0.0) / static_cast<double>(n);
  double var = 0;
  for (double v : s) var += (v - r.mean) * (v - r.mean);
  r.stddev = n > 1 ? std::sqrt(var / static_cast<double>(n - 1)) : 0.0;
  r.min = s.front();
  r.max = s.back();
  return r;
}

nlohmann::json BenchStat::to_json() const {
  return {{"median", median}, {"mean", mean}, {"stddev", stddev}, {"min", min}, {"max", max}};
}

nlohmann::json BenchReport::to_json() const {
  return {{"prompt_tokens", config.prompt_tokens},
          {"gen_tokens", config.gen_tokens},
          {"repeat", config.repeat},
          {"threads", threads},
          {"prefill_tokens_per_s", prefill_tokens_per_s.to_json()},
          {"decode_tokens_per_s", decode_tokens_per_s.to_json()},
          {"ttft_ms", ttft_ms.to_json()},
          {"peak_rss_bytes", peak_rss_bytes},
          {"weight_bytes", weight_bytes},
          {"kv_read_bytes", kv_read_bytes},
          {"read_bytes_per_s", read_bytes_per_s},
          {"plain_read_bytes_per_s", plain_read_bytes_per_s},
          {"huge_page_bytes", huge_page_bytes},
          {"thp_mode", thp_mode},
          {"omp_wait", omp_wait},
          {"mean_step_threads", mean_step_threads},
          {"prompt", config.prompt.empty() ? "random" : "text"},
          {"speculative", speculative},
          {"speculation", speculation.to_json()},
          {"prefix_hit_tokens", prefix_hit_tokens}};
}

namespace {

struct RunTimes {
  double prefill_ms = 0, decode_ms = 0;
  int64_t cached_tokens = 0;  // prompt tokens the prefix cache served instead of the model
};

Result<RunTimes> run_once(Session& session, std::span<const int32_t> prompt, int32_t gen_tokens) {
  SequenceMemory& memory = session.memory();
  std::vector<float> logits(static_cast<size_t>(session.vocab_size()));  // [vocab]
  auto seq = memory.create_sequence();
  if (!seq.ok()) return seq.status();
  RunTimes t;
  const auto start = Clock::now();
  Status status = session.extend(*seq, prompt, 0, false, logits.data());
  const auto prefilled = Clock::now();
  t.prefill_ms = ms_between(start, prefilled);
  auto n_past = static_cast<int32_t>(prompt.size());
  for (int32_t i = 0; i < gen_tokens && status.ok(); ++i) {
    // The greedy plugin's argmax (18 us over the 49k logits): a plain
    // max_element took 40 us, about 1% of a decode step, counted against
    // the model.
    const Result<int32_t> token = argmax_token(logits);
    if (!token.ok()) return token.status();
    status = session.extend(*seq, std::span<const int32_t>(&token.value(), 1), n_past++, false, logits.data());
  }
  t.decode_ms = ms_between(prefilled, Clock::now());
  memory.release(*seq);
  if (!status.ok()) return status;
  return t;
}

// One request through the scheduler (speculative decoding included), with
// the pipeline's decoding strategy and [sampling], exactly `gen_tokens` tokens.
Result<RunTimes> run_once_scheduled(Session& session, std::span<const int32_t> prompt, int32_t gen_tokens,
                                    SpeculationStats* speculation) {
  const int64_t hits_before = session.memory().stats().prefix_hit_tokens;
  Scheduler scheduler(session);
  GenerationRequest request;
  request.token_ids.assign(prompt.begin(), prompt.end());
  request.max_tokens = gen_tokens;
  request.ignore_eos = true;
  request.sampling = session.request_from_pipeline().sampling;
  scheduler.submit(std::move(request));
  auto outcomes = scheduler.run();
  if (!outcomes.ok()) return outcomes.status();
  const RequestOutcome& outcome = outcomes->front();
  if (!outcome.status.ok()) return outcome.status;
  const RequestMetrics& m = outcome.result.metrics;
  if (speculation != nullptr) speculation->merge(scheduler.stats().speculation);
  // The first token comes from the prefill's logits; decode is the rest.
  return RunTimes{m.ttft_ms, m.decode_ms, session.memory().stats().prefix_hit_tokens - hits_before};
}

// Bytes of sequence state the decode steps read on average: K and V of every
// attended position over the attention layers (prompt + 1 ... prompt + gen
// positions, mean prompt + (gen + 1) / 2), plus the recurrent layers' state.
uint64_t mean_kv_read_bytes(Session& session, const BenchConfig& config) {
  if (config.gen_tokens <= 0) return 0;
  const SequenceStateSpec spec = session.model().state_spec();
  uint64_t bytes = spec.state_bytes_per_sequence();
  for (int32_t l = 0; l < spec.n_layer(); ++l) {
    if (spec.layers[static_cast<size_t>(l)].kind != LayerMemoryKind::attention) continue;
    const uint64_t per_position = spec.kv_bytes_per_token(kv_element_bytes(session.memory().layer(l).dtype));
    const double mean_positions = config.prompt_tokens + (config.gen_tokens + 1) / 2.0;
    bytes += static_cast<uint64_t>(static_cast<double>(per_position) * mean_positions);
    break;  // one element type for every attention layer
  }
  return bytes;
}

}  // namespace

Result<BenchReport> run_bench(Session& session, const BenchConfig& config,
                              const std::function<void(int, int)>& progress) {
  if (config.prompt.empty() && config.prompt_tokens < 1) return InvalidArgument("bench needs at least one prompt token");
  if (config.gen_tokens < 0 || config.repeat < 1) return InvalidArgument("bench needs gen_tokens >= 0, repeat >= 1");
  if (config.prompt.empty() && config.prompt_tokens + config.gen_tokens > session.context_length())
    return InvalidArgument(fmt::format("{} prompt + {} generated tokens exceed the context of {}",
                                       config.prompt_tokens, config.gen_tokens, session.context_length()));
  std::vector<int32_t> prompt;
  if (!config.prompt.empty()) {
    GenerationRequest text;
    text.prompt = config.prompt;
    text.chat = config.chat;
    auto ids = session.prompt_ids(text);
    if (!ids.ok()) return ids.status();
    prompt = std::move(ids).value();
    if (static_cast<int64_t>(prompt.size()) + config.gen_tokens > session.context_length())
      return InvalidArgument(fmt::format("the prompt's {} tokens + {} generated exceed the context of {}",
                                         prompt.size(), config.gen_tokens, session.context_length()));
  } else {
    prompt.resize(static_cast<size_t>(config.prompt_tokens));
    std::mt19937_64 rng(config.seed);
    std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(session.tokenizer().vocab_size()) - 1);
    for (auto& t : prompt) t = pick(rng);
  }

  BenchReport report;
  report.config = config;
  report.config.prompt_tokens = static_cast<int32_t>(prompt.size());
  report.speculative = !config.prompt.empty() && session.draft_proposer() != nullptr;
  report.threads = session.threads();
  report.weight_bytes = session.model().weight_bytes();
  report.kv_read_bytes = mean_kv_read_bytes(session, report.config);
  std::vector<double> prefill, decode, ttft;
  const int total = config.repeat + 1;
  for (int r = 0; r < total; ++r) {
    auto t = config.prompt.empty()
                 ? run_once(session, prompt, config.gen_tokens)
                 : run_once_scheduled(session, prompt, config.gen_tokens, r == 0 ? nullptr : &report.speculation);
    if (!t.ok()) return t.status();
    if (progress) progress(r + 1, total);
    if (r == 0) continue;  // warm-up: page in the weights, size the scratch buffers
    // Repeats of a text prompt may find it in the prefix cache (the paged
    // cache's blocks, a recurrent model's state snapshots): only the tokens
    // the model computed count.
    report.prefix_hit_tokens += t->cached_tokens;
    prefill.push_back(static_cast<double>(static_cast<int64_t>(prompt.size()) - t->cached_tokens) * 1000.0 /
                      t->prefill_ms);
    // Through the scheduler the first token comes with the prefill and the
    // decode time covers the other gen_tokens - 1.
    const int32_t decoded = config.prompt.empty() ? config.gen_tokens : config.gen_tokens - 1;
    if (decoded > 0) decode.push_back(decoded * 1000.0 / t->decode_ms);
    ttft.push_back(t->prefill_ms);  // the first token is chosen from the prefill's logits
  }
  report.prefill_tokens_per_s = BenchStat::of(prefill);
  report.decode_tokens_per_s = BenchStat::of(decode);
  report.ttft_ms = BenchStat::of(ttft);
  report.peak_rss_bytes = peak_rss_bytes();
  report.huge_page_bytes = anon_huge_page_bytes();  // before the probe's buffer exists
  report.thp_mode = transparent_huge_pages_mode();
  report.omp_wait = omp_wait_setting();
  const ThreadGovernor* governor = session.thread_governor();
  report.mean_step_threads = governor != nullptr ? governor->mean_threads() : report.threads;
  if (config.gen_tokens > 0 && config.measure_bandwidth) {
    const ReadBandwidth bandwidth = measure_read_bandwidth(report.threads);
    report.read_bytes_per_s = bandwidth.bytes_per_s;
    report.plain_read_bytes_per_s = bandwidth.plain_bytes_per_s;
  }
  return report;
}

}  // namespace tessera

#include "engine/scheduler.hpp"

namespace tessera {

nlohmann::json BatchBenchReport::to_json() const {
  return {{"requests", config.requests},
          {"prompt_range", {config.prompt_min, config.prompt_max}},
          {"gen_range", {config.gen_min, config.gen_max}},
          {"seed", config.seed},
          {"threads", threads},
          {"completed", completed},
          {"failed", failed},
          {"prompt_tokens", prompt_tokens},
          {"generated_tokens", generated_tokens},
          {"wall_s", wall_s},
          {"generated_tokens_per_s", generated_tokens_per_s},
          {"decode_tokens_per_s", decode_tokens_per_s},
          {"decode_step_tokens", decode_step_tokens},
          {"total_tokens_per_s", total_tokens_per_s},
          {"latency_ms", latency_ms.to_json()},
          {"latency_p50_ms", latency_p50_ms},
          {"latency_p90_ms", latency_p90_ms},
          {"latency_p99_ms", latency_p99_ms},
          {"ttft_ms", ttft_ms.to_json()},
          {"max_running", max_running},
          {"preemptions", preemptions},
          {"peak_kv_bytes_allocated", peak_kv_bytes_allocated},
          {"peak_kv_waste_percent", peak_kv_waste_percent},
          {"peak_rss_bytes", peak_rss_bytes}};
}

Result<BatchBenchReport> run_batch_bench(Session& session, const BatchBenchConfig& config) {
  if (config.requests < 1 || config.prompt_min < 1 || config.prompt_min > config.prompt_max ||
      config.gen_min < 1 || config.gen_min > config.gen_max)
    return InvalidArgument("batch bench: need requests >= 1 and 1 <= min <= max for prompt and generation lengths");
  std::mt19937_64 rng(config.seed);
  std::uniform_int_distribution<int32_t> token(0, session.tokenizer().vocab_size() - 1);
  std::uniform_int_distribution<int32_t> prompt_len(config.prompt_min, config.prompt_max);
  std::uniform_int_distribution<int32_t> gen_len(config.gen_min, config.gen_max);

  SchedulerConfig sc;
  sc.max_batch_tokens = config.max_batch_tokens;
  Scheduler scheduler(session, sc);
  BatchBenchReport report;
  report.config = config;
  report.threads = session.threads();
  for (int32_t i = 0; i < config.requests; ++i) {
    GenerationRequest r;
    r.token_ids.resize(static_cast<size_t>(prompt_len(rng)));
    for (auto& t : r.token_ids) t = token(rng);
    r.max_tokens = gen_len(rng);
    r.ignore_eos = true;
    r.sampling.temperature = 0;
    scheduler.submit(std::move(r));
  }
  auto outcomes = scheduler.run();
  if (!outcomes.ok()) return outcomes.status();
  std::vector<double> latency, ttft;
  for (const auto& o : *outcomes) {
    if (!o.status.ok()) {
      ++report.failed;
      continue;
    }
    ++report.completed;
    const RequestMetrics& m = o.result.metrics;
    report.prompt_tokens += m.prompt_tokens;
    report.generated_tokens += m.generated_tokens;
    latency.push_back(m.ttft_ms + m.decode_ms);
    ttft.push_back(m.ttft_ms);
  }
  const SchedulerStats& s = scheduler.stats();
  report.wall_s = s.wall_ms / 1000.0;
  report.generated_tokens_per_s = report.wall_s > 0 ? report.generated_tokens / report.wall_s : 0;
  report.decode_step_tokens = s.decode_step_tokens;
  report.decode_tokens_per_s = s.decode_step_ms > 0 ? s.decode_step_tokens * 1000.0 / s.decode_step_ms : 0;
  report.total_tokens_per_s =
      report.wall_s > 0 ? (report.generated_tokens + report.prompt_tokens) / report.wall_s : 0;
  report.latency_ms = BenchStat::of(latency);
  report.latency_p50_ms = percentile(latency, 50);
  report.latency_p90_ms = percentile(latency, 90);
  report.latency_p99_ms = percentile(latency, 99);
  report.ttft_ms = BenchStat::of(ttft);
  report.max_running = s.max_running;
  report.preemptions = s.preemptions;
  report.peak_kv_bytes_allocated = s.peak_kv_bytes_allocated;
  report.peak_kv_waste_percent = s.peak_kv_waste_percent;
  report.peak_rss_bytes = peak_rss_bytes();
  return report;
}

}  // namespace tessera
