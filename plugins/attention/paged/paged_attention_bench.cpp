// Google Benchmark: paged vs flash attention on Llama-like shapes (head_dim 64,
// 4 query heads per KV head), KV in shuffled blocks of 16: decode after a 4k
// context (the split-K case: 1 query row per KV head) and a 512-token prefill.
// KV heads: 4 (Llama-style) and 3 (SmolLM2-135M, which divides unevenly over two cores).
// Run: bench_attention_paged --benchmark_filter=Decode
#include <benchmark/benchmark.h>

#include "attention_bench_problem.hpp"
#include "flash_attention.hpp"
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
