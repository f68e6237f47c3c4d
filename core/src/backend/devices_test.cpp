#include "backend/devices.hpp"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(Devices, CpuFeaturesAreConsistent) {
  const CpuFeatures f = cpu_features();
  // AVX-512 subsets imply AVX-512F; every x86-64 CPU with AVX-512 has AVX2.
  if (f.avx512bw || f.avx512vl || f.avx512vnni) {
    EXPECT_TRUE(f.avx512f);
  }
  if (f.avx512f) {
    EXPECT_TRUE(f.avx2);
  }
  EXPECT_FALSE(f.summary().empty());
}

TEST(Devices, CudaStatusIsEitherDevicesOrAReason) {
  const CudaStatus s = cuda_status();
  if (s.devices.empty()) {
    EXPECT_FALSE(s.why_none.empty());
    GTEST_SKIP() << "no CUDA device here: " << s.why_none;
  }
  EXPECT_TRUE(s.compiled);
  for (const auto& d : s.devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_GT(d.memory_bytes, 0u);
    EXPECT_GE(d.compute_major, 5);
  }
}

}  // namespace
}  // namespace tessera
