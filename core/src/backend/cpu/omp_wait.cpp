#include "backend/cpu/omp_wait.hpp"

#include <cstdlib>

namespace tessera {

std::string omp_wait_setting() {
  std::string setting;
  for (const char* name : {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"}) {
    if (const char* value = std::getenv(name)) {
      if (!setting.empty()) setting += ' ';
      setting += std::string(name) + "=" + value;
    }
  }
  return setting.empty() ? "libgomp default" : setting;
}

}  // namespace tessera
