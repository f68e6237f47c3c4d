// CudaStatus::summary: the one line users read about CUDA.
#include <fmt/format.h>

#include "backend/devices.hpp"

namespace tessera {

std::string CudaStatus::summary() const {
  if (devices.empty()) return why_none;
  std::string out;
  for (const CudaDevice& d : devices) {
    if (!out.empty()) out += "; ";
    out += fmt::format("device {} {} (sm_{}{}, {:.1f} GiB)", d.index, d.name, d.compute_major, d.compute_minor,
                       static_cast<double>(d.memory_bytes) / (1ull << 30));
  }
  return out;
}

}  // namespace tessera
