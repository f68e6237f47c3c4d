// Google Benchmark: paged vs flash attention on Llama-like shapes (head_dim 64,
// 4 query heads per KV head), KV in shuffled blocks of 16: decode after a 4k
// context (the split-K case: 1 query row per KV head) and a 512-token prefill.
// DecodeShort: one sequence after 64-512 keys (a chat's decode).
// KV heads: 4 (Llama-style) and 3 (SmolLM2-135M, which divides unevenly over two cores).
// BatchDecode mirrors a serving step of SmolLM2-135M: 8 sequences decoding one
// token each over short contexts, where the per-call overheads and the inner
// loops of short runs matter more than bandwidth.
// Run: bench_attention_paged --benchmark_filter=Decode
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cmath>
#include <random>
#include <vector>

#include "attention_bench_problem.hpp"
#include "flash_attention.hpp"
#include "kv_test_pool.hpp"
#include "paged_attention.hpp"

namespace tessera::plugins {
namespace {

// state.range(0) is the number of KV heads.
template <typename Kernel>
void run(benchmark::State& state, Kernel& kernel, int32_t n_past, int32_t n_query) {
  test::run_attention_bench(state, kernel, static_cast<int32_t>(state.range(0)), n_past, n_query);
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
// One sequence decoding after a short context (state.range(1) keys), the
// quickstart's case: with 3 KV heads on two threads, whole-head tasks split 2:1.
void BM_PagedDecodeShort(benchmark::State& state) {
  PagedAttention kernel(paged_params(0));
  run(state, kernel, static_cast<int32_t>(state.range(1)), 1);
}
void BM_PagedDecodeShortNoSplit(benchmark::State& state) {
  PagedAttention kernel(paged_params(1));
  run(state, kernel, static_cast<int32_t>(state.range(1)), 1);
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

// 8 sequences decoding one token each after 58..142 cached ones (mean 100),
// SmolLM2-135M's attention shape: 9 query heads on 3 KV heads, head_dim 64,
// f32 KV in shuffled blocks of 16. state.range(0) is the OpenMP team size.
void BM_PagedBatchDecode(benchmark::State& state) {
  constexpr int32_t kSeqs = 8, kHeads = 9, kKvHeads = 3, kDim = 64;
  const std::vector<int32_t> n_past{100, 58, 142, 77, 123, 91, 109, 100};  // [kSeqs]
  std::mt19937 rng(1);
  std::vector<int32_t> lengths(n_past);
  for (int32_t& len : lengths) ++len;  // the new token's K/V is in the cache too
  test::KvTestPool pool = test::make_shuffled_pool(lengths, 16, kKvHeads, kDim, rng, 0);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> q(static_cast<size_t>(kSeqs * kHeads * kDim));  // [kSeqs, kHeads, kDim]
  for (float& x : q) x = value(rng);
  std::vector<float> out(q.size());
  std::vector<AttentionSeq> seqs;
  for (int32_t i = 0; i < kSeqs; ++i)
    seqs.push_back({pool.tables[static_cast<size_t>(i)], n_past[static_cast<size_t>(i)], 1, i});
  AttentionArgs args;
  args.q = q.data();
  args.out = out.data();
  args.n_head = kHeads;
  args.n_kv_head = kKvHeads;
  args.head_dim = kDim;
  args.scale = 1.0f / std::sqrt(static_cast<float>(kDim));
  args.kv = pool.view();
  args.seqs = seqs;

  PagedAttention kernel(paged_params(0));
  const int saved_threads = omp_get_max_threads();
  omp_set_num_threads(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    if (!kernel.forward(args).ok()) state.SkipWithError("forward failed");
    benchmark::DoNotOptimize(out.data());
  }
  omp_set_num_threads(saved_threads);
  double keys = 0.0;
  for (int32_t n : n_past) keys += n + 1;
  state.counters["GFLOP/s"] = benchmark::Counter(
      4.0 * kDim * kHeads * keys, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

BENCHMARK(BM_PagedDecode4k)->ArgName("kv_heads")->Arg(4)->Arg(3)->Arg(1);
BENCHMARK(BM_PagedDecode4kNoSplit)->ArgName("kv_heads")->Arg(4)->Arg(3)->Arg(1);
BENCHMARK(BM_PagedDecodeShort)->ArgNames({"kv_heads", "keys"})->ArgsProduct({{3}, {64, 128, 256, 512}});
BENCHMARK(BM_PagedDecodeShortNoSplit)->ArgNames({"kv_heads", "keys"})->ArgsProduct({{3}, {64, 128, 256, 512}});
BENCHMARK(BM_FlashDecode4k)->ArgName("kv_heads")->Arg(4)->Arg(3)->Arg(1);
BENCHMARK(BM_PagedPrefill512)->ArgName("kv_heads")->Arg(4)->Arg(3);
BENCHMARK(BM_FlashPrefill512)->ArgName("kv_heads")->Arg(4)->Arg(3);
BENCHMARK(BM_PagedBatchDecode)->ArgName("threads")->Arg(1)->Arg(2);

}  // namespace
}  // namespace tessera::plugins

BENCHMARK_MAIN();
