// HostBuffer: 64-byte aligned by default; huge_pages() aligned to 2 MiB.
// Whether the kernel grants huge pages depends on the machine's THP mode, so
// only the alignment and the usable size are checked.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "tessera/tensor.hpp"

namespace tessera {
namespace {

uintptr_t address(const std::byte* p) { return reinterpret_cast<uintptr_t>(p); }

TEST(HostBuffer, AlignedAndWritableOverItsSize) {
  HostBuffer plain(100);
  ASSERT_NE(plain.data(), nullptr);
  EXPECT_EQ(plain.size(), 100u);
  EXPECT_EQ(address(plain.data()) % 64, 0u);
  std::memset(plain.data(), 1, plain.size());  // ASan checks the bounds

  HostBuffer huge = HostBuffer::huge_pages(3 << 20);
  ASSERT_NE(huge.data(), nullptr);
  EXPECT_EQ(huge.size(), size_t{3} << 20);
  EXPECT_EQ(address(huge.data()) % HostBuffer::kHugePage, 0u);
  std::memset(huge.data(), 2, huge.size());

  EXPECT_EQ(HostBuffer(0).data(), nullptr);
  EXPECT_EQ(HostBuffer::huge_pages(0).data(), nullptr);
}

}  // namespace
}  // namespace tessera
