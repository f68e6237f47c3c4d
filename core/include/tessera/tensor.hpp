// tessera/tensor.hpp: element types and owning host buffers.
//
// Layout convention: row-major; shape[0] is the outermost dimension. A weight
// matrix for y = x·Wᵀ has shape [out_features, in_features]. Block formats
// (the GGUF quantizations) pack `block_elems` consecutive elements of a row
// into `block_bytes` bytes, so a row of n elements takes n / block_elems *
// block_bytes bytes; n must be a multiple of block_elems.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <string_view>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tessera {

// Values are stable ABI: append only. Block formats follow ggml's layouts.
enum class DType : uint32_t {
  f32 = 0,
  f16 = 1,
  bf16 = 2,
  i8 = 3,
  i32 = 4,
  u8 = 5,
  q4_0 = 6,   // ggml block of 32: f16 scale, 16 bytes of 4-bit values
  q4_1 = 7,   // ggml block of 32: f16 scale, f16 min, 16 bytes of 4-bit values
  q8_0 = 8,   // ggml block of 32: f16 scale, 32 int8 values
  q4_k = 9,   // ggml super-block of 256
  q5_k = 10,  // ggml super-block of 256
  q6_k = 11,  // ggml super-block of 256
  i16 = 12,
  i64 = 13,
  f64 = 14,
  q8_1 = 15,  // ggml block of 32: f16 scale, f16 sum, 32 int8 values (activations)
  q5_0 = 16,  // ggml block of 32: f16 scale, 32 high bits, 16 bytes of low 4 bits
  q5_1 = 17,  // ggml block of 32: f16 scale, f16 min, 32 high bits, 16 bytes of low 4 bits
  q2_k = 18,  // ggml super-block of 256: 2-bit values, 4-bit sub-block scales and mins
  q3_k = 19,  // ggml super-block of 256: 3-bit values, 6-bit sub-block scales
  count_      // not a type; keep last
};

struct DTypeInfo {
  std::string_view name;  // "f32", "q4_1", ...
  uint32_t block_elems;   // elements per block (1 for plain types)
  uint32_t block_bytes;   // bytes per block
};

constexpr DTypeInfo dtype_info(DType t) {
  constexpr std::array<DTypeInfo, static_cast<size_t>(DType::count_)> table = {{
      {"f32", 1, 4},
      {"f16", 1, 2},
      {"bf16", 1, 2},
      {"i8", 1, 1},
      {"i32", 1, 4},
      {"u8", 1, 1},
      {"q4_0", 32, 18},
      {"q4_1", 32, 20},
      {"q8_0", 32, 34},
      {"q4_k", 256, 144},
      {"q5_k", 256, 176},
      {"q6_k", 256, 210},
      {"i16", 1, 2},
      {"i64", 1, 8},
      {"f64", 1, 8},
      {"q8_1", 32, 36},
      {"q5_0", 32, 22},
      {"q5_1", 32, 24},
      {"q2_k", 256, 84},
      {"q3_k", 256, 110},
  }};
  const auto i = static_cast<size_t>(t);
  return i < table.size() ? table[i] : DTypeInfo{"invalid", 0, 0};
}

constexpr std::string_view dtype_name(DType t) { return dtype_info(t).name; }
constexpr bool is_block_format(DType t) { return dtype_info(t).block_elems > 1; }

// Bytes taken by `n_elems` consecutive elements (n_elems a multiple of the block size).
constexpr uint64_t dtype_row_bytes(DType t, uint64_t n_elems) {
  const auto info = dtype_info(t);
  return info.block_elems == 0 ? 0 : n_elems / info.block_elems * info.block_bytes;
}

inline constexpr int kMaxDims = 4;

// Owning, 64-byte aligned host memory (cache line and AVX-512 friendly).
class HostBuffer {
 public:
  static constexpr size_t kHugePage = size_t{2} << 20;

  HostBuffer() = default;
  explicit HostBuffer(size_t bytes) : HostBuffer(bytes, 64) {}

  // Memory streamed in full (repacked weights, a bandwidth probe): aligned to
  // 2 MiB and advised MADV_HUGEPAGE before anything touches it, so Linux backs
  // it with transparent huge pages where THP is "always" or "madvise". On 4 KiB
  // pages every 4 KiB read is a TLB miss and a stop for the hardware
  // prefetchers. Elsewhere, or under THP "never", it is ordinary memory.
  static HostBuffer huge_pages(size_t bytes) {
    HostBuffer b(bytes, kHugePage);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (b.data_ != nullptr) (void)madvise(b.data_.get(), b.allocated_, MADV_HUGEPAGE);  // advice only
#endif
    return b;
  }
  std::byte* data() { return data_.get(); }
  const std::byte* data() const { return data_.get(); }
  template <typename T>
  T* as() { return reinterpret_cast<T*>(data_.get()); }
  template <typename T>
  const T* as() const { return reinterpret_cast<const T*>(data_.get()); }
  size_t size() const { return bytes_; }

 private:
  // `bytes` rounded up to a multiple of `alignment` (aligned_alloc's rule).
  HostBuffer(size_t bytes, size_t alignment) : bytes_(bytes) {
    if (bytes == 0) return;
    allocated_ = (bytes + alignment - 1) / alignment * alignment;
    void* p = std::aligned_alloc(alignment, allocated_);
    if (p == nullptr) throw std::bad_alloc();
    data_.reset(static_cast<std::byte*>(p));
  }

  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte, Free> data_;
  size_t bytes_ = 0;
  size_t allocated_ = 0;
};

}  // namespace tessera
