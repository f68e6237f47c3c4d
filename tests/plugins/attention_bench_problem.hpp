// attention_bench_problem.hpp: one attention problem on Llama-like shapes for
// the Google Benchmark programs (head_dim 64, 4 query heads per KV head, KV in
// shuffled blocks of 16), and the loop that times a kernel on it.
#pragma once

#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "kv_test_pool.hpp"
#include "tessera/attention.hpp"

namespace tessera::test {

inline constexpr int32_t kBenchGroup = 4;
inline constexpr int32_t kBenchHeadDim = 64;
inline constexpr int32_t kBenchBlock = 16;

struct AttentionBenchProblem {
  KvTestPool pool;
  std::vector<float> q, out;  // [n_query, n_head, head_dim]
  AttentionSeq seq;
  AttentionArgs args;
};

// One sequence: n_query new tokens after n_past cached ones.
inline AttentionBenchProblem make_bench_problem(int32_t n_kv_heads, int32_t n_past, int32_t n_query) {
  std::mt19937 rng(1);
  AttentionBenchProblem p;
  const std::vector<int32_t> lengths{n_past + n_query};
  p.pool = make_shuffled_pool(lengths, kBenchBlock, n_kv_heads, kBenchHeadDim, rng, 0);
  p.q.resize(static_cast<size_t>(n_query) * n_kv_heads * kBenchGroup * kBenchHeadDim);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (float& x : p.q) x = value(rng);
  p.out.resize(p.q.size());
  p.seq = {p.pool.tables[0], n_past, n_query, 0};
  p.args.q = p.q.data();
  p.args.out = p.out.data();
  p.args.n_head = n_kv_heads * kBenchGroup;
  p.args.n_kv_head = n_kv_heads;
  p.args.head_dim = kBenchHeadDim;
  p.args.scale = 1.0f / std::sqrt(static_cast<float>(kBenchHeadDim));
  p.args.kv = p.pool.view();
  p.args.seqs = {&p.seq, 1};
  return p;
}

// Times `kernel` on the problem and reports GFLOP/s of causal attention:
// 4 * head_dim FLOPs per (query head, visible key).
inline void run_attention_bench(benchmark::State& state, AttentionKernel& kernel, int32_t n_kv_heads,
                                int32_t n_past, int32_t n_query) {
  AttentionBenchProblem p = make_bench_problem(n_kv_heads, n_past, n_query);
  for (auto _ : state) {
    if (!kernel.forward(p.args).ok()) state.SkipWithError("forward failed");
    benchmark::DoNotOptimize(p.out.data());
  }
  const double pairs = static_cast<double>(n_query) * n_past + static_cast<double>(n_query) * (n_query + 1) / 2;
  state.counters["GFLOP/s"] =
      benchmark::Counter(4.0 * kBenchHeadDim * n_kv_heads * kBenchGroup * pairs,
                         benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

}  // namespace tessera::test
