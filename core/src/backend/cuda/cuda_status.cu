// The CUDA runtime's view of the machine, compiled by nvcc where CUDA is built.
#include <cuda_runtime.h>

#include "backend/devices.hpp"

namespace tessera {

CudaStatus cuda_status() {
  CudaStatus status;
  status.compiled = true;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    status.why_none = cudaGetErrorString(err);
    return status;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    status.devices.push_back({i, prop.name, prop.major, prop.minor, prop.totalGlobalMem});
  }
  if (status.devices.empty()) status.why_none = "the CUDA runtime reports no device";
  return status;
}

}  // namespace tessera
