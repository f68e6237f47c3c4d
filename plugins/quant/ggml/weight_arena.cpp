#include "weight_arena.hpp"

#include <utility>

#include "tessera/tensor.hpp"

namespace tessera::ggml {
namespace {

constexpr size_t kAlignment = 64;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// A slice over the whole of `buffer`, which the slice's owner keeps alive.
WeightArena::Slice own(HostBuffer buffer) {
  auto holder = std::make_shared<HostBuffer>(std::move(buffer));
  std::byte* data = holder->data();
  return {std::shared_ptr<std::byte>(holder, data), data};
}

}  // namespace

WeightArena::Slice WeightArena::allocate_alone(size_t bytes) { return own(HostBuffer(bytes == 0 ? 1 : bytes)); }

WeightArena::Slice WeightArena::allocate(size_t bytes) {
  const size_t need = round_up(bytes == 0 ? 1 : bytes, kAlignment);
  std::lock_guard<std::mutex> lock(mutex_);
  if (need > kChunkBytes) return own(HostBuffer::huge_pages(need));  // the current chunk keeps serving smaller slices
  if (chunk_ == nullptr || capacity_ - used_ < need) {
    chunk_ = own(HostBuffer::huge_pages(kChunkBytes)).owner;
    used_ = 0;
    capacity_ = kChunkBytes;
  }
  Slice s{chunk_, chunk_.get() + used_};
  used_ += need;
  return s;
}

}  // namespace tessera::ggml
