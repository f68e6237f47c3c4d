// dispatch.cpp: which kernel table this CPU runs, decided once.
#include <atomic>

#include "kernels.hpp"

namespace tessera::ggml {
namespace {

std::atomic<const KernelTable*> g_forced{nullptr};

}  // namespace

const KernelTable* kernels_for(IsaLevel level) {
  if (!cpu_supports(level)) return nullptr;
  switch (level) {
    case IsaLevel::scalar: return &scalar_kernel_table();
#ifndef TESSERA_GGML_NO_X86_KERNELS
    case IsaLevel::avx2: return &avx2_kernel_table();
    case IsaLevel::avx512: return &avx512_kernel_table();
    case IsaLevel::avx512_vnni: return &avx512_vnni_kernel_table();
    case IsaLevel::amx: return &amx_kernel_table();
#endif
    default: return nullptr;
  }
}

const KernelTable& active_kernels() {
  if (const KernelTable* forced = g_forced.load(std::memory_order_acquire)) return *forced;
  static const KernelTable* const initial = kernels_for(best_isa_level());
  return *initial;
}

bool force_isa_level(IsaLevel level) {
  const KernelTable* table = kernels_for(level);
  if (table == nullptr) return false;
  g_forced.store(table, std::memory_order_release);
  return true;
}

}  // namespace tessera::ggml
