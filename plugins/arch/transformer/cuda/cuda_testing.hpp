// cuda_testing.hpp: how the CUDA tests ask whether a GPU can run here.
#pragma once

#include <cstdlib>
#include <string>

#include <cuda_runtime_api.h>

namespace tessera::transformer::cuda::testing {

// Empty when a device is usable, else why not.
inline std::string why_no_gpu() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) return std::string("no usable CUDA device: ") + cudaGetErrorString(err);
  if (count == 0) return "no CUDA device";
  return {};
}

// TESSERA_REQUIRE_GPU=1 (scripts/device-check.sh sets it): a GPU run cannot pass by skipping.
inline bool gpu_required() {
  const char* v = std::getenv("TESSERA_REQUIRE_GPU");
  return v != nullptr && std::string(v) != "0" && !std::string(v).empty();
}

}  // namespace tessera::transformer::cuda::testing

// Skips the test without a GPU, saying why; fails instead under TESSERA_REQUIRE_GPU.
#define TESSERA_SKIP_WITHOUT_GPU()                                                    \
  do {                                                                                \
    const std::string why_ = ::tessera::transformer::cuda::testing::why_no_gpu();     \
    if (!why_.empty() && ::tessera::transformer::cuda::testing::gpu_required())       \
      FAIL() << why_ << " (TESSERA_REQUIRE_GPU is set)";                              \
    if (!why_.empty()) GTEST_SKIP() << why_;                                          \
  } while (0)
