// w8a8_kernels_scalar.cpp: the reference the other levels are tested against,
// read straight from the panel layout, and the run-time choice of level.
#include <atomic>

#include "w8a8_kernels.hpp"
#include "w8a8_layout.hpp"

namespace tessera::int8 {
namespace {

void panel_dot_scalar(const int8_t* panel, const int32_t* /*row_sums*/, int64_t k_chunks, const int8_t* x,
                      size_t x_stride, int nx, int32_t* acc) {
  for (int xi = 0; xi < nx; ++xi) {
    const int8_t* xr = x + static_cast<size_t>(xi) * x_stride;
    for (int r = 0; r < kPanelRows; ++r) {
      int32_t sum = 0;
      for (int64_t c = 0; c < k_chunks; ++c) {
        const int8_t* chunk = panel + static_cast<size_t>(c) * kChunkBytes;
        for (int k = 0; k < kChunk; ++k) sum += chunk[(k / 4) * 64 + r * 4 + k % 4] * xr[c * kChunk + k];
      }
      acc[xi * kPanelRows + r] = sum;
    }
  }
}

std::atomic<const KernelTable*> g_forced{nullptr};

}  // namespace

const KernelTable& scalar_kernels() {
  static const KernelTable table{IsaLevel::scalar, "scalar", &panel_dot_scalar, nullptr};
  return table;
}

const KernelTable* kernels_for(IsaLevel level) {
  if (!cpu_supports(level)) return nullptr;
  switch (level) {
    case IsaLevel::scalar: return &scalar_kernels();
#if TESSERA_ISA_X86
    case IsaLevel::avx2:
    case IsaLevel::avx512: return &avx2_kernels();
    case IsaLevel::avx512_vnni: return &avx512_vnni_kernels();
    case IsaLevel::amx: return &amx_kernels();
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

}  // namespace tessera::int8
