// Google Benchmark: the recurrent part of a Mamba-1 prefill at mamba-130m's
// shapes (d_inner 1536, d_state 16), 512 tokens on one thread, and the
// softplus on dt against the libm form it replaced; Mamba-2's scan at the
// 130m-shape Mamba-2's (24 heads of 64 channels, d_state 128, one group),
// token by token against the chunked form.
// Run: bench_arch_mamba [--benchmark_filter=Softplus]
#include <benchmark/benchmark.h>

#include <cmath>
#include <vector>

#include "ssm.hpp"
#include "ssm_testing.hpp"

namespace tessera::mamba {
namespace {

constexpr int64_t kTokens = 512, kChannels = 1536, kState = 16;

using testing::random_values;

// dt_proj's outputs of real models sit mostly in [-8, 2].
const std::vector<float>& dt_raw() {
  static const std::vector<float> v = random_values(kTokens * kChannels, -8.0f, 2.0f, 1);
  return v;
}

void BM_SoftplusLibm(benchmark::State& state) {
  std::vector<float> dt(dt_raw().size());
  for (auto _ : state) {
    const std::vector<float>& in = dt_raw();
    for (size_t i = 0; i < in.size(); ++i) dt[i] = std::log1p(std::exp(in[i]));
    benchmark::DoNotOptimize(dt.data());
  }
  state.SetItemsProcessed(state.iterations() * kTokens * kChannels);
}

void BM_Softplus(benchmark::State& state) {
  std::vector<float> dt(dt_raw().size());
  for (auto _ : state) {
    dt = dt_raw();
    softplus_in_place(dt.data(), static_cast<int64_t>(dt.size()));
    benchmark::DoNotOptimize(dt.data());
  }
  state.SetItemsProcessed(state.iterations() * kTokens * kChannels);
}

void BM_Mamba1Scan(benchmark::State& state) {
  std::vector<float> dt = dt_raw();
  softplus_in_place(dt.data(), static_cast<int64_t>(dt.size()));
  const std::vector<float> x = random_values(kTokens * kChannels, -2, 2, 2);
  const std::vector<float> bc = random_values(kTokens * 2 * kState, -1, 1, 3);  // [T, B | C]
  const std::vector<float> a = random_values(kChannels * kState, -3, -0.05f, 4);
  const std::vector<float> d = random_values(kChannels, -1, 1, 5);
  std::vector<float> ssm_state(kChannels * kState, 0.0f), y(kTokens * kChannels);
  Mamba1Scan s;
  s.x = {x.data(), kChannels};
  s.dt = {dt.data(), kChannels};
  s.b = {bc.data(), 2 * kState};
  s.c = {bc.data() + kState, 2 * kState};
  s.a = a.data();
  s.d = d.data();
  s.state = ssm_state.data();
  s.y = {y.data(), kChannels};
  s.d_state = kState;
  for (auto _ : state) {
    mamba1_scan(s, kTokens, 0, kChannels);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * kTokens * kChannels);
}

// Mamba-2's recurrent part over 512 tokens; chunked: whole chunks (SSD).
void run_mamba2(benchmark::State& state, bool chunked) {
  constexpr int64_t kHeads = 24, kHeadDim = 64, kState2 = 128, kInner = kHeads * kHeadDim;
  const std::vector<float> x = random_values(kTokens * kInner, -2, 2, 2);
  const std::vector<float> bc = random_values(kTokens * 2 * kState2, -1, 1, 3);  // [T, B | C]
  const std::vector<float> dt = random_values(kTokens * kHeads, -4, 1, 4);
  const std::vector<float> dt_bias = random_values(kHeads, -1, 1, 5);
  const std::vector<float> a = random_values(kHeads, -4, -0.1f, 6);
  const std::vector<float> d = random_values(kHeads, -1, 1, 7);
  std::vector<float> ssm_state(kInner * kState2, 0.0f), y(kTokens * kInner);
  Mamba2Scan s;
  s.x = {x.data(), kInner};
  s.b = {bc.data(), 2 * kState2};
  s.c = {bc.data() + kState2, 2 * kState2};
  s.dt_raw = {dt.data(), kHeads};
  s.a = a.data();
  s.d = d.data();
  s.dt_bias = dt_bias.data();
  s.state = ssm_state.data();
  s.y = {y.data(), kInner};
  s.n_head = kHeads;
  s.head_dim = kHeadDim;
  s.n_group = 1;
  s.d_state = kState2;
  for (auto _ : state) {
    if (chunked) {
      mamba2_chunked_scan(s, kTokens / kSsdChunk, 0, kHeads);
    } else {
      mamba2_scan(s, kTokens, 0, kHeads);
    }
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * kTokens);
}
void BM_Mamba2Scan(benchmark::State& state) { run_mamba2(state, false); }
void BM_Mamba2ChunkedScan(benchmark::State& state) { run_mamba2(state, true); }

BENCHMARK(BM_SoftplusLibm);
BENCHMARK(BM_Softplus);
BENCHMARK(BM_Mamba1Scan);
BENCHMARK(BM_Mamba2Scan);
BENCHMARK(BM_Mamba2ChunkedScan);

}  // namespace
}  // namespace tessera::mamba

BENCHMARK_MAIN();
