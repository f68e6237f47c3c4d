// devices.hpp: what this build and this machine can run on.
#pragma once

#include <string>
#include <vector>

namespace tessera {

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false, avx512f = false, avx512bw = false, avx512vl = false,
       avx512vnni = false;
  std::string summary() const;  // "avx2 fma f16c avx512f ..."
};
CpuFeatures cpu_features();

struct CudaDevice {
  int index = 0;
  std::string name;
  int compute_major = 0, compute_minor = 0;
  size_t memory_bytes = 0;
};

struct CudaStatus {
  bool compiled = false;            // built with the CUDA backend
  std::vector<CudaDevice> devices;  // usable devices (empty without a GPU)
  std::string why_none;             // no device: "not usable: <why>", one line for a user

  // "device 0 NVIDIA H200 (sm_90, 139.8 GiB); ..." or why_none: what
  // `tessera --version` and `tessera plugins` print after "cuda: ".
  std::string summary() const;
};

// The CUDA runtime is asked once; a build without CUDA says "not compiled with CUDA".
CudaStatus cuda_status();

}  // namespace tessera
