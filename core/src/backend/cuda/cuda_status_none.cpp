// cuda_status() for builds without the CUDA backend.
#include "backend/devices.hpp"

namespace tessera {

CudaStatus cuda_status() {
  CudaStatus status;
  status.why_none = "not usable: not compiled with CUDA (configure with nvcc on PATH, or -DTESSERA_CUDA=ON)";
  return status;
}

}  // namespace tessera
