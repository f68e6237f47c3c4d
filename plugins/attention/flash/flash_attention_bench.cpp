// Google Benchmark: flash vs reference attention on Llama-like shapes
// (head_dim 64, 4 query heads per KV head), KV in shuffled blocks of 16.
// Run: bench_attention_flash --benchmark_filter=Decode
#include <benchmark/benchmark.h>

#include "attention_bench_problem.hpp"
#include "flash_attention.hpp"
#include "reference_attention.hpp"

namespace tessera::plugins {
namespace {

constexpr int32_t kKvHeads = 4;

template <typename Kernel>
void run(benchmark::State& state, Kernel& kernel, int32_t n_past, int32_t n_query) {
  test::run_attention_bench(state, kernel, kKvHeads, n_past, n_query);
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
