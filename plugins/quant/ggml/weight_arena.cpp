#include "weight_arena.hpp"

#include <cstdlib>
#include <new>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tessera::ggml {
namespace {

constexpr size_t kAlignment = 64;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

std::shared_ptr<std::byte> owned(void* p) {
  if (p == nullptr) throw std::bad_alloc();
  return std::shared_ptr<std::byte>(static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); });
}

// A chunk of `bytes` (a multiple of the huge page), aligned to it and advised
// before anything touches it, so the first write faults in huge pages.
std::shared_ptr<std::byte> new_chunk(size_t bytes) {
  std::shared_ptr<std::byte> chunk = owned(std::aligned_alloc(WeightArena::kHugePage, bytes));
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  (void)madvise(chunk.get(), bytes, MADV_HUGEPAGE);  // advice only: EINVAL where THP is compiled out changes nothing
#endif
  return chunk;
}

}  // namespace

WeightArena::Slice WeightArena::allocate_alone(size_t bytes) {
  std::shared_ptr<std::byte> own = owned(std::aligned_alloc(kAlignment, round_up(bytes == 0 ? 1 : bytes, kAlignment)));
  std::byte* data = own.get();
  return {std::move(own), data};
}

WeightArena::Slice WeightArena::allocate(size_t bytes) {
  const size_t need = round_up(bytes == 0 ? 1 : bytes, kAlignment);
  std::lock_guard<std::mutex> lock(mutex_);
  if (need > kChunkBytes) {  // a chunk of its own; the current one keeps serving smaller slices
    std::shared_ptr<std::byte> own = new_chunk(round_up(need, kHugePage));
    std::byte* data = own.get();
    return {std::move(own), data};
  }
  if (chunk_ == nullptr || capacity_ - used_ < need) {
    chunk_ = new_chunk(kChunkBytes);
    used_ = 0;
    capacity_ = kChunkBytes;
  }
  Slice s{chunk_, chunk_.get() + used_};
  used_ += need;
  return s;
}

}  // namespace tessera::ggml
