// bench_kernels.cpp: Google Benchmark figures for the ggml quant kernels.
//
//   bench_quant_kernels [--benchmark_filter=...]
//
// MatVec/<format>/<out>/<in>/<threads>/<level>: one decode-time y = W x at
// SmolLM2-135M's shapes. "streamed" variants cycle through enough copies of
// the weights (>= 256 MiB) that every call reads them from DRAM, as a decode
// step does (the model's ~96 MiB of weights do not stay in cache); "hot"
// variants reuse one copy (cache-resident: the kernel's compute ceiling).
// bytes_per_second is weight bytes read per second: compare with the ~57 GB/s
// DRAM roofline of two cores.
// DecodeStep: all 211 matrix-vector products of one SmolLM2-135M token
// (30 layers x q, k, v, o, gate, up, down in Q4_1 + the 49152 x 576 Q8_0
// output), reporting tokens per second of matrix work.
// Prefill: 512 activation rows at once (GFLOP/s counter; "int8 GOP/s" counts
// every activation term's products, the integer work done).
// Int8Peak/<level>: one core's ceiling for that work (int8_peak.hpp).
// GptqSolve/<rows>/<cols>/<level>: GPTQ's solve of one weight, H given.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "float_linear.hpp"
#ifndef TESSERA_GGML_NO_X86_KERNELS  // the peak loops are x86 instructions
#include "int8_peak.hpp"
#endif
#include "formats.hpp"
#include "grid_quantize.hpp"
#include "hessian_products.hpp"
#include "kernels.hpp"
#include "kquant_linear.hpp"
#include "prefetch_choice.hpp"
#include "quant_linear.hpp"
#include "repack.hpp"
#include "tessera/half.hpp"

namespace tessera::ggml {
namespace {

// Weight bytes of `rows` x `cols` with random quants and realistic scales;
// generated directly (quantizing 135M floats would dominate start-up).
std::vector<uint8_t> random_weights(DType type, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  const size_t bytes = rows * dtype_row_bytes(type, cols);
  std::vector<uint8_t> w(bytes);
  for (size_t i = 0; i + 4 <= bytes; i += 4) {
    const uint32_t v = rng();
    std::memcpy(&w[i], &v, 4);
  }
  const size_t bb = dtype_info(type).block_bytes;
  const uint16_t d = f32_to_f16(0.01f), m = f32_to_f16(-0.08f);
  const bool has_min = type == DType::q4_1 || type == DType::q5_1 || type == DType::q4_k || type == DType::q5_k ||
                       type == DType::q2_k;
  // Q6_K, Q3_K and Q2_K keep d (and Q2_K dmin after it) last; the others first.
  const size_t d_at = type == DType::q6_k   ? offsetof(BlockQ6K, d)
                      : type == DType::q3_k ? offsetof(BlockQ3K, d)
                      : type == DType::q2_k ? offsetof(BlockQ2K, d)
                                            : 0;
  for (size_t off = 0; off < bytes; off += bb) {
    std::memcpy(&w[off + d_at], &d, 2);
    if (has_min) std::memcpy(&w[off + d_at + 2], &m, 2);
  }
  return w;
}

std::vector<float> random_x(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(n);
  for (auto& v : x) v = dist(rng);
  return x;
}

struct Copies {
  std::vector<std::vector<uint8_t>> weights;
  std::vector<std::unique_ptr<Linear>> linears;
};

// The driver the plugin makes for `type` (activations = "q8" for one term, "q8x2" for two).
std::unique_ptr<Linear> make_linear(DType type, const std::vector<uint8_t>& w, int64_t out, int64_t in,
                                    ActivationTerms terms = ActivationTerms::q8) {
  if (is_kquant(type))
    return std::make_unique<KQuantLinear>(w.data(), type, out, in, std::vector<float>{}, true, nullptr, terms);
  return std::make_unique<QuantLinear>(w.data(), type, out, in, std::vector<float>{}, true, nullptr, terms);
}

Copies make_copies(DType type, int64_t out, int64_t in, uint64_t min_total_bytes,
                   ActivationTerms terms = ActivationTerms::q8) {
  Copies c;
  const uint64_t one = out * dtype_row_bytes(type, in);
  const uint64_t n = min_total_bytes == 0 ? 1 : (min_total_bytes + one - 1) / one;
  for (uint64_t i = 0; i < n; ++i) {
    c.weights.push_back(random_weights(type, out, in, static_cast<uint32_t>(i + 1)));
    c.linears.push_back(make_linear(type, c.weights.back(), out, in, terms));
  }
  return c;
}

bool use_level(benchmark::State& state, int64_t level) {
  if (!force_isa_level(static_cast<IsaLevel>(level))) {
    state.SkipWithError("SIMD level not supported by this CPU");
    return false;
  }
  return true;
}

// args: out, in, threads, level, streamed (0/1)
template <DType Type>
void BM_MatVec(benchmark::State& state) {
  const int64_t out = state.range(0), in = state.range(1);
  if (!use_level(state, state.range(3))) return;
  omp_set_num_threads(static_cast<int>(state.range(2)));
  Copies c = make_copies(Type, out, in, state.range(4) ? (256ull << 20) : 0);
  const auto x = random_x(in, 7);
  std::vector<float> y(out);
  size_t i = 0;
  for (auto _ : state) {
    (void)c.linears[i]->forward(x.data(), y.data(), 1);
    benchmark::DoNotOptimize(y.data());
    if (++i == c.linears.size()) i = 0;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * c.linears[0]->weight_bytes()));
  state.SetLabel(std::string(isa_level_name(active_kernels().level)));
}

void matvec_args(benchmark::internal::Benchmark* b) {
  const int64_t shapes[][2] = {{576, 576}, {192, 576}, {1536, 576}, {576, 1536}, {49152, 576}};
  const int best = static_cast<int>(best_isa_level());
  for (const auto& s : shapes)
    for (int64_t threads : {1, 2})
      for (int64_t streamed : {0, 1}) b->Args({s[0], s[1], threads, best, streamed});
  // The other levels at one mid-size shape, for comparison.
  for (int level = 0; level < best; ++level) b->Args({1536, 576, 2, level, 1});
  b->ArgNames({"out", "in", "threads", "level", "streamed"});
}

BENCHMARK(BM_MatVec<DType::q4_1>)->Apply(matvec_args)->UseRealTime();
BENCHMARK(BM_MatVec<DType::q8_0>)->Apply(matvec_args)->UseRealTime();

// The formats of llama.cpp's K-quant mixes: Q5_0 (rows that are not whole
// super-blocks) at SmolLM2's gate/up shape, Q4_K and Q6_K at its down shape
// and at a 4096-wide one (Llama-class models), one and two threads, streamed.
void kmix_args(benchmark::internal::Benchmark* b) {
  const int best = static_cast<int>(best_isa_level());
  for (int64_t threads : {1, 2}) {
    b->Args({576, 1536, threads, best, 1});
    b->Args({4096, 4096, threads, best, 1});
  }
  b->Args({4096, 4096, 1, static_cast<int>(IsaLevel::avx2), 1});  // the 256-bit kernels, for comparison
  b->Args({1536, 1536, 1, best, 0});  // cache-resident: the kernel's compute ceiling
  b->Args({1536, 1536, 1, static_cast<int>(IsaLevel::avx2), 0});
  b->ArgNames({"out", "in", "threads", "level", "streamed"});
}
BENCHMARK(BM_MatVec<DType::q5_0>)
    ->Args({1536, 576, 1, static_cast<int>(best_isa_level()), 1})
    ->Args({1536, 576, 2, static_cast<int>(best_isa_level()), 1})
    ->Args({1536, 576, 2, static_cast<int>(IsaLevel::avx2), 1})  // the 8-row layout
    ->UseRealTime();
BENCHMARK(BM_MatVec<DType::q4_0>)->Apply(kmix_args)->UseRealTime();  // its own 8- and 16-row layouts, paired
BENCHMARK(BM_MatVec<DType::q4_k>)->Apply(kmix_args)->UseRealTime();
BENCHMARK(BM_MatVec<DType::q6_k>)->Apply(kmix_args)->UseRealTime();
BENCHMARK(BM_MatVec<DType::q5_k>)->Apply(kmix_args)->UseRealTime();
BENCHMARK(BM_MatVec<DType::q3_k>)->Apply(kmix_args)->UseRealTime();
BENCHMARK(BM_MatVec<DType::q2_k>)->Apply(kmix_args)->UseRealTime();

// Fixed cost of one forward on a tiny matrix: quantizing x, the (skipped or
// entered) parallel region, the tile loop.
void BM_TinyMatVecOverhead(benchmark::State& state) {
  omp_set_num_threads(static_cast<int>(state.range(0)));
  force_isa_level(best_isa_level());
  Copies c = make_copies(DType::q8_0, 64, 64, 0);
  const auto x = random_x(64, 1);
  std::vector<float> y(64);
  for (auto _ : state) {
    (void)c.linears[0]->forward(x.data(), y.data(), 1);
    benchmark::DoNotOptimize(y.data());
  }
}
BENCHMARK(BM_TinyMatVecOverhead)->Arg(1)->Arg(2)->UseRealTime();

// An empty OpenMP parallel region on the warm team: the per-call price of
// going parallel, to compare with the matrix-vector times above.
void BM_OmpRegion(benchmark::State& state) {
  omp_set_num_threads(static_cast<int>(state.range(0)));
  int sink = 0;
  for (auto _ : state) {
#pragma omp parallel
    { benchmark::DoNotOptimize(sink); }
  }
}
BENCHMARK(BM_OmpRegion)->Arg(2)->UseRealTime();

// args: threads, activation terms (1: q8, 2: q8x2)
void BM_DecodeStep(benchmark::State& state) {
  omp_set_num_threads(static_cast<int>(state.range(0)));
  const auto terms = static_cast<ActivationTerms>(state.range(1));
  force_isa_level(best_isa_level());
  constexpr int kLayers = 30;
  const int64_t layer_shapes[][2] = {{576, 576}, {192, 576}, {192, 576}, {576, 576},
                                     {1536, 576}, {1536, 576}, {576, 1536}};
  std::vector<std::vector<uint8_t>> store;
  std::vector<std::unique_ptr<QuantLinear>> linears;
  uint64_t bytes = 0;
  for (int l = 0; l < kLayers; ++l) {
    for (const auto& s : layer_shapes) {
      store.push_back(random_weights(DType::q4_1, s[0], s[1], static_cast<uint32_t>(store.size() + 1)));
      linears.push_back(std::make_unique<QuantLinear>(store.back().data(), DType::q4_1, s[0], s[1],
                                                      std::vector<float>{}, true, nullptr, terms));
      bytes += linears.back()->weight_bytes();
    }
  }
  store.push_back(random_weights(DType::q8_0, 49152, 576, 999));
  linears.push_back(
      std::make_unique<QuantLinear>(store.back().data(), DType::q8_0, 49152, 576, std::vector<float>{}, true, nullptr, terms));
  bytes += linears.back()->weight_bytes();
  const auto x = random_x(1536, 3);
  std::vector<float> y(49152);
  for (auto _ : state) {
    for (auto& lin : linears) (void)lin->forward(x.data(), y.data(), 1);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["tok/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["matvecs"] = static_cast<double>(linears.size());
}
BENCHMARK(BM_DecodeStep)
    ->ArgsProduct({{1, 2}, {1, 2}})
    ->ArgNames({"threads", "terms"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// 512 activation rows through one [out, in] matrix of `type`, timed; the
// rate counted in GFLOP/s (2 * out * in per row) and in int8 GOP/s (as many
// again per further activation term: the integer products done, to set
// beside Int8Peak's ceiling).
void time_prefill(benchmark::State& state, DType type, int64_t out, int64_t in, ActivationTerms terms) {
  constexpr int64_t n = 512;
  Copies c = make_copies(type, out, in, 0, terms);
  const auto x = random_x(n * in, 5);
  std::vector<float> y(n * out);
  for (auto _ : state) {
    (void)c.linears[0]->forward(x.data(), y.data(), n);
    benchmark::DoNotOptimize(y.data());
  }
  const double ops = 2.0 * out * in * n * state.iterations();
  state.counters["GFLOP/s"] = benchmark::Counter(ops / 1e9, benchmark::Counter::kIsRate);
  state.counters["int8 GOP/s"] =
      benchmark::Counter(ops * static_cast<double>(terms) / 1e9, benchmark::Counter::kIsRate);
}

// args: format (as DType value), out, in, threads, activation terms
void BM_Prefill(benchmark::State& state) {
  const auto type = static_cast<DType>(state.range(0));
  omp_set_num_threads(static_cast<int>(state.range(3)));
  force_isa_level(best_isa_level());
  time_prefill(state, type, state.range(1), state.range(2), static_cast<ActivationTerms>(state.range(4)));
  state.SetLabel(std::string(dtype_name(type)));
}
BENCHMARK(BM_Prefill)
    ->ArgsProduct({{static_cast<int64_t>(DType::q4_1), static_cast<int64_t>(DType::q8_0)}, {576, 1536}, {576}, {1, 2}, {1, 2}})
    ->Args({static_cast<int64_t>(DType::q4_1), 576, 1536, 2, 1})
    ->Args({static_cast<int64_t>(DType::q4_1), 576, 1536, 2, 2})
    ->ArgNames({"type", "out", "in", "threads", "terms"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// K-quant prefill at SmolLM2's down shape (576 x 1536), 512 rows, one
// thread, per level; args: format (DType value), level, activation terms.
void BM_KQuantPrefill(benchmark::State& state) {
  const auto type = static_cast<DType>(state.range(0));
  if (!use_level(state, state.range(1))) return;
  omp_set_num_threads(1);
  time_prefill(state, type, 576, 1536, static_cast<ActivationTerms>(state.range(2)));
  state.SetLabel(std::string(dtype_name(type)) + " " + std::string(isa_level_name(active_kernels().level)));
}
BENCHMARK(BM_KQuantPrefill)
    ->ArgsProduct({{static_cast<int64_t>(DType::q4_k), static_cast<int64_t>(DType::q5_k), static_cast<int64_t>(DType::q6_k),
                    static_cast<int64_t>(DType::q3_k), static_cast<int64_t>(DType::q2_k)},
                   {static_cast<int64_t>(IsaLevel::avx2), static_cast<int64_t>(IsaLevel::avx512_vnni),
                    static_cast<int64_t>(IsaLevel::amx)},
                   {1, 2}})
    ->ArgNames({"type", "level", "terms"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// The 32-block formats' prefill at the same shape, one thread: the 16-row
// groups at avx512_vnni, their panels at amx; args: format, level, terms.
void BM_BlockPrefill(benchmark::State& state) {
  const auto type = static_cast<DType>(state.range(0));
  if (!use_level(state, state.range(1))) return;
  omp_set_num_threads(1);
  time_prefill(state, type, 576, 1536, static_cast<ActivationTerms>(state.range(2)));
  state.SetLabel(std::string(dtype_name(type)) + " " + std::string(isa_level_name(active_kernels().level)));
}
BENCHMARK(BM_BlockPrefill)
    ->ArgsProduct({{static_cast<int64_t>(DType::q4_0), static_cast<int64_t>(DType::q4_1), static_cast<int64_t>(DType::q5_0),
                    static_cast<int64_t>(DType::q8_0)},
                   {static_cast<int64_t>(IsaLevel::avx512_vnni), static_cast<int64_t>(IsaLevel::amx)},
                   {1, 2}})
    ->ArgNames({"type", "level", "terms"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

#ifndef TESSERA_GGML_NO_X86_KERNELS
// One core's ceiling for 8-bit multiply-adds with each level's instruction
// (int8_peak.hpp), in GOP/s (two per multiply-add, as the Prefill counters
// count): a prefill's "int8 GOP/s" on one thread can come near it, never pass
// it. args: level
void BM_Int8Peak(benchmark::State& state) {
  const auto level = static_cast<IsaLevel>(state.range(0));
  if (!use_level(state, state.range(0))) return;
  constexpr int64_t kRounds = 1 << 20;
  int64_t products = 0;
  for (auto _ : state) {
    switch (level) {
      case IsaLevel::avx2: products += int8_peak_avx2(kRounds); break;
      case IsaLevel::avx512_vnni: products += int8_peak_avx512_vnni(kRounds / 4); break;
      default: products += int8_peak_amx(kRounds / 256); break;
    }
  }
  state.counters["GOP/s"] = benchmark::Counter(2.0 * static_cast<double>(products) / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(isa_level_name(level)));
}
BENCHMARK(BM_Int8Peak)
    ->Arg(static_cast<int64_t>(IsaLevel::avx2))
    ->Arg(static_cast<int64_t>(IsaLevel::avx512_vnni))
    ->Arg(static_cast<int64_t>(IsaLevel::amx))
    ->ArgName("level")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
#endif

// The K-quant pair kernels (two repacked groups as one) against the group
// kernel called on each group, for nx activation rows, at the best level:
// where pairs start to pay (KQuantLinear takes them from kMinPairRows rows).
// 4096 x 4096, streamed from memory (256 MiB of copies), one thread.
// args: format (DType value), activation rows, pairs (0: groups, 1: pairs)
void BM_KQuantPairs(benchmark::State& state) {
  const auto type = static_cast<DType>(state.range(0));
  const int nx = static_cast<int>(state.range(1));
  const bool pairs = state.range(2) != 0;
  constexpr int64_t out = 4096, in = 4096, nb = in / kSuperBlock;
  force_isa_level(best_isa_level());
  const KernelTable& k = active_kernels();
  const KQuantPairFn pair = kquant_pair_kernel(k, type);
  const KQuantGroupFn group = kquant_group_kernel(k, type);
  if (pair == nullptr) {
    state.SkipWithError("this level has no K-quant pair kernels");
    return;
  }
  const size_t group_bytes = static_cast<size_t>(nb) * kquant_x8_block_bytes(type);
  const size_t matrix_bytes = out / kRepackRows * group_bytes;
  std::vector<std::vector<uint8_t>> copies((256ull << 20) / matrix_bytes + 1);
  for (size_t c = 0; c < copies.size(); ++c) {
    const auto w = random_weights(type, out, in, static_cast<uint32_t>(c + 1));
    copies[c].resize(matrix_bytes);
    repack_kquant_x8(type, w.data(), out, nb, copies[c].data());
  }
  const auto x = random_x(nx * in, 9);
  std::vector<BlockQ8K> xq(static_cast<size_t>(nx * nb));
  for (int i = 0; i < nx; ++i) k.quantize_q8_k(x.data() + i * in, xq.data() + i * nb, in);
  std::vector<float> y(static_cast<size_t>(nx * out));
  size_t c = 0;
  for (auto _ : state) {
    const uint8_t* m = copies[c].data();
    for (int64_t r = 0; r < out; r += 2 * kRepackRows, m += 2 * group_bytes) {
      if (pairs) {
        pair(m, group_bytes, nb, xq.data(), nb, nx, y.data() + r, out);
      } else {
        group(m, nb, xq.data(), nb, nx, y.data() + r, out);
        group(m + group_bytes, nb, xq.data(), nb, nx, y.data() + r + kRepackRows, out);
      }
    }
    benchmark::DoNotOptimize(y.data());
    if (++c == copies.size()) c = 0;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * matrix_bytes));
  state.SetLabel(std::string(dtype_name(type)) + " " + std::string(isa_level_name(k.level)));
}
BENCHMARK(BM_KQuantPairs)
    ->ArgsProduct({{static_cast<int64_t>(DType::q4_k), static_cast<int64_t>(DType::q6_k), static_cast<int64_t>(DType::q3_k)},
                   {1, 2, 4, 8},
                   {0, 1}})
    ->ArgNames({"type", "rows", "pairs"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// Plain-float weights (f32, f16, bf16) through FloatLinear with a few
// activation rows, as a speculative verification step sends them: Qwen2.5-
// Coder-1.5B's gate/up shape (8960 x 1536), 2 threads, best level, ms per
// call: rows 4 against rows 1 is what verifying three drafts adds.
// args: format (DType value), rows
void BM_FloatRows(benchmark::State& state) {
  const auto type = static_cast<DType>(state.range(0));
  const int64_t rows = state.range(1), out = 8960, in = 1536;
  omp_set_num_threads(2);
  force_isa_level(best_isa_level());
  std::vector<uint8_t> w(out * dtype_row_bytes(type, in));
  const auto values = random_x(out * in, 3);
  for (int64_t i = 0; i < out * in; ++i) {
    auto* dst = w.data() + i * static_cast<int64_t>(dtype_info(type).block_bytes);
    const float v = 0.05f * values[i];
    if (type == DType::f32) {
      std::memcpy(dst, &v, 4);
    } else {
      const uint16_t h = type == DType::f16 ? f32_to_f16(v) : f32_to_bf16(v);
      std::memcpy(dst, &h, 2);
    }
  }
  FloatLinear linear(w.data(), type, out, in, {});
  const auto x = random_x(rows * in, 5);
  std::vector<float> y(rows * out);
  for (auto _ : state) {
    (void)linear.forward(x.data(), y.data(), rows);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetLabel(std::string(dtype_name(type)) + " " + std::string(isa_level_name(active_kernels().level)));
}
BENCHMARK(BM_FloatRows)
    ->ArgsProduct({{static_cast<int64_t>(DType::f16), static_cast<int64_t>(DType::bf16), static_cast<int64_t>(DType::f32)},
                   {1, 2, 3, 4, 8, 32}})
    ->ArgNames({"type", "rows"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// GPTQ's solve of one weight (grid_quantize.hpp: H's factor, then the
// columns in lazy blocks of 128) at Qwen2.5-0.5B's shapes, Q4_0 grids, 2
// threads: the down projection (896 x 4864), gate/up (4864 x 896), q/o (896
// x 896). H from random inputs (its values do not change the work).
// args: rows, cols, level (IsaLevel value)
void BM_GptqSolve(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const auto level = static_cast<IsaLevel>(state.range(2));
  if (!cpu_supports(level)) {
    state.SkipWithError("this CPU lacks the level");
    return;
  }
  omp_set_num_threads(2);
  const auto w = random_x(rows * cols, 7);
  const int64_t inputs = 2 * cols;
  const auto x = random_x(inputs * cols, 8);
  Eigen::MatrixXf h = Eigen::MatrixXf::Zero(cols, cols);  // [cols, cols]; its lower triangle
  if (!add_gram(x.data(), inputs, cols, h.data())) {
    state.SkipWithError("out of memory");
    return;
  }
  for (auto _ : state) {
    auto g = gptq(DType::q4_0, w.data(), rows, cols, h, GptqSettings{.level = level});
    if (!g.ok()) {
      state.SkipWithError(std::string(g.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(g->q.data());
  }
  state.SetLabel(std::string(isa_level_name(level)));
}
BENCHMARK(BM_GptqSolve)
    ->ArgsProduct({{896}, {4864}, {static_cast<int64_t>(IsaLevel::avx2), static_cast<int64_t>(IsaLevel::avx512_vnni)}})
    ->Args({4864, 896, static_cast<int64_t>(IsaLevel::avx512_vnni)})
    ->Args({896, 896, static_cast<int64_t>(IsaLevel::avx512_vnni)})
    ->ArgNames({"rows", "cols", "level"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera::ggml

// The kernels prefetch as the process's choice says (prefetch_choice.hpp);
// left automatic, a benchmark would switch modes between its iterations.
// TESSERA_PREFETCH=on measures with prefetch; anything else, without.
int main(int argc, char** argv) {
  const char* prefetch = std::getenv("TESSERA_PREFETCH");
  tessera::ggml::prefetch_choice().set_mode(prefetch != nullptr && std::string_view(prefetch) == "on"
                                                ? tessera::ggml::PrefetchMode::on
                                                : tessera::ggml::PrefetchMode::off);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
