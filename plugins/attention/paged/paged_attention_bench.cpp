// Google Benchmark: paged vs flash attention on Llama-like shapes (head_dim 64,
// 4 query heads per KV head), KV in shuffled blocks of 16: decode after a 4k
// context (the split-K case: 1 query row per KV head) and a 512-token prefill.
// KV heads: 4 (Llama-style) and 3 (SmolLM2-135M, which divides unevenly over two cores).
// Run: bench_attention_paged --benchmark_filter=Decode
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "flash_attention.hpp"
#include "kv_test_pool.hpp"
#include "paged_attention.hpp"

namespace tessera::plugins {
namespace {

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
Problem make_problem(int32_t n_kv_heads, int32_t n_past, int32_t n_query) {
  std::mt19937 rng(1);
  Problem p;
  const std::vector<int32_t> lengths{n_past + n_query};
  p.pool = test::make_shuffled_pool(lengths, kBlock, n_kv_heads, kHeadDim, rng, 0);
  p.q.resize(static_cast<size_t>(n_query) * n_kv_heads * kGroup * kHeadDim);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (float& x : p.q) x = value(rng);
  p.out.resize(p.q.size());
  p.seq = {p.pool.tables[0], n_past, n_query, 0};
  p.args.q = p.q.data();
  p.args.out = p.out.data();
  p.args.n_head = n_kv_heads * kGroup;
  p.args.n_kv_head = n_kv_heads;
  p.args.head_dim = kHeadDim;
  p.args.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  p.args.kv = p.pool.view();
  p.args.seqs = {&p.seq, 1};
  return p;
}

template <typename Kernel>
void run(benchmark::State& state, Kernel& kernel, int32_t n_past, int32_t n_query) {
  const auto n_kv_heads = static_cast<int32_t>(state.range(0));
  Problem p = make_problem(n_kv_heads, n_past, n_query);
  for (auto _ : state) {
    if (!kernel.forward(p.args).ok()) state.SkipWithError("forward failed");
    benchmark::DoNotOptimize(p.out.data());
  }
  // Score + weighted-sum FLOPs of causal attention: 4 * head_dim per (query head, visible key).
  const double pairs = static_cast<double>(n_query) * n_past + static_cast<double>(n_query) * (n_query + 1) / 2;
  state.counters["GFLOP/s"] = benchmark::Counter(4.0 * kHeadDim * n_kv_heads * kGroup * pairs,
                                                 benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
}

ParamValues paged_params(int64_t splits) {
  ParamValues v;
  v.set("query_rows", int64_t{16});
  v.set("splits", splits);
  return v;
}

ParamValues flash_defaults() {
  ParamValues v;
  v.set("tile", int64_t{64});
  v.set("query_rows", int64_t{16});
  return v;
}

void BM_PagedDecode4k(benchmark::State& state) {
  PagedAttention kernel(paged_params(0));
  run(state, kernel, 4096, 1);
}
void BM_PagedDecode4kNoSplit(benchmark::State& state) {
  PagedAttention kernel(paged_params(1));
  run(state, kernel, 4096, 1);
}
void BM_FlashDecode4k(benchmark::State& state) {
  FlashAttention kernel(flash_defaults());
  run(state, kernel, 4096, 1);
}
void BM_PagedPrefill512(benchmark::State& state) {
  PagedAttention kernel(paged_params(0));
  run(state, kernel, 0, 512);
}
void BM_FlashPrefill512(benchmark::State& state) {
  FlashAttention kernel(flash_defaults());
  run(state, kernel, 0, 512);
}

BENCHMARK(BM_PagedDecode4k)->ArgName("kv_heads")->Arg(4)->Arg(3)->Arg(1);
BENCHMARK(BM_PagedDecode4kNoSplit)->ArgName("kv_heads")->Arg(4)->Arg(3)->Arg(1);
BENCHMARK(BM_FlashDecode4k)->ArgName("kv_heads")->Arg(4)->Arg(3)->Arg(1);
BENCHMARK(BM_PagedPrefill512)->ArgName("kv_heads")->Arg(4)->Arg(3);
BENCHMARK(BM_FlashPrefill512)->ArgName("kv_heads")->Arg(4)->Arg(3);

}  // namespace
}  // namespace tessera::plugins

BENCHMARK_MAIN();
