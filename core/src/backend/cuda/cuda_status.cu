// The CUDA runtime's view of the machine, compiled by nvcc where CUDA is built.
#include <cuda_runtime.h>

#include <string>

#include "backend/devices.hpp"

namespace tessera {
namespace {

// One line for a user: what is missing, not the driver's raw message.
std::string why_unusable(cudaError_t err) {
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  const std::string version = std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
  switch (err) {
    case cudaErrorNoDevice:
      return "not usable: no CUDA device on this machine";
    case cudaErrorInsufficientDriver:
      return "not usable: no NVIDIA driver for CUDA " + version + " (none installed, or an older one)";
    default:
      return std::string("not usable: the CUDA runtime ") + version + " failed to start (" + cudaGetErrorName(err) + ")";
  }
}

}  // namespace

CudaStatus cuda_status() {
  CudaStatus status;
  status.compiled = true;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    status.why_none = why_unusable(err);
    return status;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    status.devices.push_back({i, prop.name, prop.major, prop.minor, prop.totalGlobalMem});
  }
  if (status.devices.empty()) status.why_none = "not usable: the CUDA runtime reports no device";
  return status;
}

}  // namespace tessera
