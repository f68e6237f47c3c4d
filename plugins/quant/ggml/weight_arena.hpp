// weight_arena.hpp: memory for repacked weights, in 2 MiB pages where the
// kernel offers them.
//
// Decode streams every weight once per token. On 4 KiB pages the default
// model's 96 MB are ~24k pages per token: each one a TLB miss and a point
// where the hardware prefetchers stop and restart. QuantLinear therefore
// carves its repacked weights out of large chunks made by
// HostBuffer::huge_pages (2 MiB-aligned, advised MADV_HUGEPAGE), which Linux
// backs with transparent huge pages when THP is "always" or "madvise"
// (Debian's default is "madvise"). Measured on the default model: decode
// +13-18% (docs/kernels.md). Where THP is "never", or on another OS, the
// chunks are ordinary memory and nothing else changes.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>

#include "tessera/tensor.hpp"

namespace tessera::ggml {

class WeightArena {
 public:
  // A 64-byte aligned region; `owner` keeps its chunk alive, so a slice may
  // outlive the arena (a Linear may outlive its Quantizer).
  struct Slice {
    std::shared_ptr<std::byte> owner;
    std::byte* data = nullptr;
  };

  // Throws std::bad_alloc when memory runs out.
  Slice allocate(size_t bytes);
  // Plain 64-byte aligned memory of its own (no chunk, no advice): for a
  // Linear made outside any arena.
  static Slice allocate_alone(size_t bytes);

  static constexpr size_t kHugePage = HostBuffer::kHugePage;
  static constexpr size_t kChunkBytes = size_t{16} << 20;  // a slice larger than this gets a chunk of its own

 private:
  std::mutex mutex_;
  std::shared_ptr<std::byte> chunk_;
  size_t used_ = 0;
  size_t capacity_ = 0;
};

}  // namespace tessera::ggml
