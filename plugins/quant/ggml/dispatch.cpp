// dispatch.cpp: which kernel table this CPU runs, decided once.
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "kernels.hpp"

namespace tessera::ggml {
namespace {

std::atomic<const KernelTable*> g_forced{nullptr};

}  // namespace

const char* simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::scalar: return "scalar";
    case SimdLevel::avx2: return "avx2";
    case SimdLevel::avx512: return "avx512";
    case SimdLevel::avx512_vnni: return "avx512_vnni";
  }
  return "unknown";
}

bool cpu_supports(SimdLevel level) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("f16c");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  switch (level) {
    case SimdLevel::scalar: return true;
    case SimdLevel::avx2: return avx2;
    case SimdLevel::avx512: return avx512;
    case SimdLevel::avx512_vnni: return avx512 && __builtin_cpu_supports("avx512vnni");
  }
  return false;
#else
  return level == SimdLevel::scalar;
#endif
}

SimdLevel best_simd_level() {
  for (int l = kSimdLevelCount - 1; l > 0; --l) {
    if (cpu_supports(static_cast<SimdLevel>(l))) return static_cast<SimdLevel>(l);
  }
  return SimdLevel::scalar;
}

const KernelTable* kernels_for(SimdLevel level) {
  if (!cpu_supports(level)) return nullptr;
  switch (level) {
    case SimdLevel::scalar: return &scalar_kernel_table();
#ifndef TESSERA_GGML_NO_X86_KERNELS
    case SimdLevel::avx2: return &avx2_kernel_table();
    case SimdLevel::avx512: return &avx512_kernel_table();
    case SimdLevel::avx512_vnni: return &avx512_vnni_kernel_table();
#endif
    default: return nullptr;
  }
}

// TESSERA_GGML_SIMD=scalar|avx2|avx512|avx512_vnni caps the level (for
// comparisons and for ruling a kernel in or out when chasing a bug); a level
// the CPU lacks, or an unknown name, is ignored.
const KernelTable* initial_table() {
  if (const char* env = std::getenv("TESSERA_GGML_SIMD")) {
    for (int l = 0; l < kSimdLevelCount; ++l) {
      if (std::strcmp(env, simd_level_name(static_cast<SimdLevel>(l))) == 0) {
        if (const KernelTable* t = kernels_for(static_cast<SimdLevel>(l))) return t;
      }
    }
  }
  return kernels_for(best_simd_level());
}

const KernelTable& active_kernels() {
  if (const KernelTable* forced = g_forced.load(std::memory_order_acquire)) return *forced;
  static const KernelTable* const initial = initial_table();
  return *initial;
}

bool force_simd_level(SimdLevel level) {
  const KernelTable* table = kernels_for(level);
  if (table == nullptr) return false;
  g_forced.store(table, std::memory_order_release);
  return true;
}

}  // namespace tessera::ggml
