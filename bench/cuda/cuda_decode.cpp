// tessera_cuda_bench (bench/cuda): the CUDA forward's speed on one model file, as JSON.
//
//   tessera_cuda_bench MODEL [--prompt 512] [--decode 128] [--rounds 3] [--no-graphs]
//
// Measures, each the best of `rounds`:
//   * the device's copy bandwidth (a 2 GiB device-to-device copy, bytes read
//     plus bytes written over CUDA-event time), the ceiling decode is held to;
//   * prefill: a prompt of `prompt` tokens from position 0, tokens per second;
//   * decode: `decode` greedy steps after a 16-token prompt, tokens per
//     second, and the weight bytes one step reads times that rate as a share
//     of the copy bandwidth.
// Timing is wall-clock around calls that end in a host synchronisation.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <cxxopts.hpp>
#include <nlohmann/json.hpp>

#include "cuda_transformer.hpp"
#include "device_buffer.hpp"
#include "model/model_file.hpp"

namespace {

using tessera::transformer::cuda::check_cuda;
using tessera::transformer::cuda::CudaTransformer;
using tessera::transformer::cuda::DeviceBuffer;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double copy_bandwidth(int rounds) {
  const size_t bytes = size_t(2) << 30;
  DeviceBuffer a(bytes), b(bytes);
  check_cuda(cudaMemset(a.as<char>(), 1, bytes), "memset");
  cudaEvent_t start = nullptr, stop = nullptr;
  check_cuda(cudaEventCreate(&start), "event");
  check_cuda(cudaEventCreate(&stop), "event");
  float best_ms = 1e30f;
  for (int r = 0; r < rounds + 1; ++r) {  // the first is a warm-up
    check_cuda(cudaEventRecord(start), "event");
    check_cuda(cudaMemcpy(b.as<char>(), a.as<char>(), bytes, cudaMemcpyDeviceToDevice), "copy");
    check_cuda(cudaEventRecord(stop), "event");
    check_cuda(cudaEventSynchronize(stop), "event");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, start, stop), "event");
    if (r > 0) best_ms = std::min(best_ms, ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return 2.0 * double(bytes) / (best_ms * 1e-3);
}

std::vector<int32_t> prompt_of(int64_t n, int64_t vocab) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7919 + 13) % vocab);
  return ids;
}

template <typename T>
T value_or_die(tessera::Result<T> r, const char* what) {
  if (!r.ok()) {
    std::fprintf(stderr, "tessera_cuda_bench: %s: %s\n", what, r.status().message().c_str());
    std::exit(1);
  }
  return std::move(r).value();
}

}  // namespace

int run(int argc, char** argv) {
  cxxopts::Options options("tessera_cuda_bench", "The CUDA forward's prefill and decode speed, as JSON");
  options.add_options()("model", "GGUF file", cxxopts::value<std::string>())(
      "prompt", "prefill tokens", cxxopts::value<int64_t>()->default_value("512"))(
      "decode", "decode steps", cxxopts::value<int64_t>()->default_value("128"))(
      "rounds", "rounds (best of)", cxxopts::value<int>()->default_value("3"))(
      "no-graphs", "launch each decode step's kernels instead of replaying a graph");
  options.parse_positional({"model"});
  cxxopts::ParseResult args;
  try {
    args = options.parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera_cuda_bench: %s\n", e.what());
    return 2;
  }
  if (!args.count("model")) {
    std::fprintf(stderr, "%s\n", options.help().c_str());
    return 2;
  }
  const auto prompt_tokens = args["prompt"].as<int64_t>();
  const auto decode_tokens = args["decode"].as<int64_t>();
  const int rounds = std::max(1, args["rounds"].as<int>());
  if (prompt_tokens < 1 || decode_tokens < 1) {
    std::fprintf(stderr, "tessera_cuda_bench: --prompt and --decode must be at least 1\n");
    return 2;
  }

  auto file = value_or_die(tessera::open_model(args["model"].as<std::string>()), "model");
  tessera::transformer::cuda::CudaTransformerOptions opts;
  opts.graphs = !args.count("no-graphs");
  opts.max_context = std::max<int64_t>(prompt_tokens, 16 + decode_tokens) + 1;
  const auto load_start = Clock::now();
  auto gpu = value_or_die(CudaTransformer::create(*file, opts), "load");
  const double load_s = seconds_since(load_start);

  const double bandwidth = copy_bandwidth(rounds);
  const std::vector<int32_t> long_prompt = prompt_of(prompt_tokens, gpu->vocab());
  const std::vector<int32_t> short_prompt = prompt_of(16, gpu->vocab());
  value_or_die(gpu->start(long_prompt), "warm-up");
  double best_prefill = 1e30, best_decode = 1e30;
  for (int r = 0; r < rounds; ++r) {
    auto t = Clock::now();
    value_or_die(gpu->start(long_prompt), "prefill");
    best_prefill = std::min(best_prefill, seconds_since(t));
    value_or_die(gpu->start(short_prompt), "prompt");
    value_or_die(gpu->step(), "first step");  // the graph is captured here, outside the timing
    t = Clock::now();
    for (int64_t i = 0; i < decode_tokens; ++i) value_or_die(gpu->step(), "decode");
    best_decode = std::min(best_decode, seconds_since(t));
  }
  const double decode_tps = double(decode_tokens) / best_decode;
  nlohmann::json out = {
      {"model", args["model"].as<std::string>()},
      {"device", gpu->device_name()},
      {"graphs", opts.graphs},
      {"load_s", load_s},
      {"copy_bandwidth_gb_s", bandwidth / 1e9},
      {"weight_bytes", gpu->weight_bytes()},
      {"prefill_tokens", prompt_tokens},
      {"prefill_tok_s", double(prompt_tokens) / best_prefill},
      {"decode_tokens", decode_tokens},
      {"decode_tok_s", decode_tps},
      {"decode_ms_per_token", 1e3 / decode_tps},
      {"decode_bandwidth_share", double(gpu->weight_bytes()) * decode_tps / bandwidth},
      {"rounds", rounds}};
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {  // a CUDA call failed (check_cuda), or out of memory
    std::fprintf(stderr, "tessera_cuda_bench: %s\n", e.what());
    return 1;
  }
}
