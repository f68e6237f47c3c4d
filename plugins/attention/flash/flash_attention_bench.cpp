// Google Benchmark: flash vs reference attention on Llama-like shapes
// (head_dim 64, 4 query heads per KV head), KV in shuffled blocks of 16.
// Run: bench_attention_flash --benchmark_filter=Decode
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "flash_attention.hpp"
#include "kv_test_pool.hpp"
#include "reference_attention.hpp"

namespace tessera::plugins {
namespace {

constexpr int32_t kKvHeads = 4;
constexpr int32_t kGroup = 4;
constexpr int32_t kHeadDim = 64;
constexpr int32_t kBlock = 16;

struct Problem {
  test::KvTestPool pool;
  std::vector<float> q, out;  // [n_query, n_head, head_dim]
  AttentionSeq seq;
  AttentionArgs args;
};

// One sequence: n_query new tokens after n_past cached ones.
Problem make_problem(int32_t n_past, int32_t n_query) {
  std::mt19937 rng(1);
  Problem p;
  const std::vector<int32_t> lengths{n_past + n_query};
  p.pool = test::make_shuffled_pool(lengths, kBlock, kKvHeads, kHeadDim, rng, 0);
  p.q.resize(static_cast<size_t>(n_query) * kKvHeads * kGroup * kHeadDim);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (float& x : p.q) x = value(rng);
  p.out.resize(p.q.size());
  p.seq = {p.pool.tables[0], n_past, n_query, 0};
  p.args.q = p.q.data();
  p.args.out = p.out.data();
  p.args.n_head = kKvHeads * kGroup;
  p.args.n_kv_head = kKvHeads;
  p.args.head_dim = kHeadDim;
  p.args.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  p.args.kv = p.pool.view();
  p.args.seqs = {&p.seq, 1};
  return p;
}

template <typename Kernel>
void run(benchmark::State& state, Kernel& kernel, int32_t n_past, int32_t n_query) {
  Problem p = make_problem(n_past, n_query);
  for (auto _ : state) {
    if (!kernel.forward(p.args).ok()) state.SkipWithError("forward failed");
    benchmark::DoNotOptimize(p.out.data());
  }
  // Score + weighted-sum FLOPs of causal attention: 4 * head_dim per (query head, visible key).
  const double pairs = static_cast<double>(n_query) * n_past + static_cast<double>(n_query) * (n_query + 1) / 2;
  state.counters["GFLOP/s"] = benchmark::Counter(4.0 * kHeadDim * kKvHeads * kGroup * pairs,
                                                 benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
}

ParamValues flash_defaults() {
  ParamValues v;
  v.set("tile", int64_t{64});
  v.set("query_rows", int64_t{16});
  return v;
}

void BM_FlashDecode(benchmark::State& state) {
  FlashAttention kernel(flash_defaults());
  run(state, kernel, static_cast<int32_t>(state.range(0)), 1);
}
void BM_ReferenceDecode(benchmark::State& state) {
  ReferenceAttention kernel({});
  run(state, kernel, static_cast<int32_t>(state.range(0)), 1);
}
void BM_FlashPrefill(benchmark::State& state) {
  FlashAttention kernel(flash_defaults());
  run(state, kernel, 0, static_cast<int32_t>(state.range(0)));
}
void BM_ReferencePrefill(benchmark::State& state) {
  ReferenceAttention kernel({});
  run(state, kernel, 0, static_cast<int32_t>(state.range(0)));
}

BENCHMARK(BM_FlashDecode)->Arg(512)->Arg(4096);
BENCHMARK(BM_ReferenceDecode)->Arg(512)->Arg(4096);
BENCHMARK(BM_FlashPrefill)->Arg(128)->Arg(512);
BENCHMARK(BM_ReferencePrefill)->Arg(128);

}  // namespace
}  // namespace tessera::plugins

BENCHMARK_MAIN();
