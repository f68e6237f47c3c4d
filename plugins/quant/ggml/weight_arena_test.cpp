// The repacked-weight arena: aligned, disjoint slices that keep their memory
// after the arena is gone; chunks on 2 MiB boundaries (what lets the kernel
// back them with huge pages), and a slice larger than a chunk in one of its own.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "weight_arena.hpp"

namespace tessera::ggml {
namespace {

uintptr_t address(const std::byte* p) { return reinterpret_cast<uintptr_t>(p); }

TEST(WeightArena, SlicesAreAlignedDisjointAndShareChunks) {
  WeightArena arena;
  const size_t sizes[] = {100, 64, 1, 576 * 360, 3 << 20, 0, 4096};
  std::vector<WeightArena::Slice> slices;
  for (size_t n : sizes) {
    slices.push_back(arena.allocate(n));
    ASSERT_NE(slices.back().data, nullptr);
    EXPECT_EQ(address(slices.back().data) % 64, 0u) << n;
    std::memset(slices.back().data, 0xab, n);  // writable over the whole size (ASan checks the bounds)
  }
  EXPECT_EQ(address(slices[0].data) % WeightArena::kHugePage, 0u);  // a chunk starts on a huge page
  for (size_t i = 0; i + 1 < slices.size(); ++i) {
    if (slices[i].owner != slices[i + 1].owner) continue;
    EXPECT_GE(address(slices[i + 1].data), address(slices[i].data) + sizes[i]) << "slices " << i << " and " << i + 1;
  }
  EXPECT_EQ(slices[0].owner, slices[6].owner);  // 3.5 MiB in all: one chunk
}

TEST(WeightArena, LargeSlicesGetTheirOwnChunkAndOutliveTheArena) {
  WeightArena::Slice big, small_before, small_after;
  {
    WeightArena arena;
    small_before = arena.allocate(1000);
    big = arena.allocate(WeightArena::kChunkBytes + 1);
    small_after = arena.allocate(1000);
  }
  EXPECT_NE(big.owner, small_before.owner);
  EXPECT_EQ(small_before.owner, small_after.owner);  // the current chunk kept serving
  EXPECT_EQ(address(big.data) % WeightArena::kHugePage, 0u);
  std::memset(big.data, 1, WeightArena::kChunkBytes + 1);  // the arena is gone; the memory is not
  std::memset(small_after.data, 2, 1000);
  EXPECT_EQ(static_cast<int>(big.data[WeightArena::kChunkBytes]), 1);
}

TEST(WeightArena, AllocateAloneIsPlainAlignedMemory) {
  WeightArena::Slice s = WeightArena::allocate_alone(200);
  ASSERT_NE(s.data, nullptr);
  EXPECT_EQ(address(s.data) % 64, 0u);
  std::memset(s.data, 3, 200);
}

}  // namespace
}  // namespace tessera::ggml
