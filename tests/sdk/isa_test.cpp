// tessera/isa.hpp: level names, the CPU's levels in order, TESSERA_ISA's
// cap, and isa_select falling back to narrower variants.
#include <gtest/gtest.h>

#include "tessera/isa.hpp"

namespace tessera {
namespace {

TEST(Isa, NamesRoundTrip) {
  for (int l = 0; l < kIsaLevelCount; ++l) {
    const auto level = static_cast<IsaLevel>(l);
    EXPECT_EQ(parse_isa_level(isa_level_name(level)), level);
  }
  EXPECT_EQ(parse_isa_level("avx3"), std::nullopt);
}

TEST(Isa, LevelsNestAndTheBestIsSupported) {
  EXPECT_TRUE(cpu_supports(IsaLevel::scalar));
  for (int l = 1; l < kIsaLevelCount; ++l) {
    if (cpu_supports(static_cast<IsaLevel>(l))) {
      EXPECT_TRUE(cpu_supports(static_cast<IsaLevel>(l - 1))) << l;
    }
  }
  EXPECT_TRUE(cpu_supports(best_isa_level()));
}

int one() { return 1; }
int two() { return 2; }

TEST(Isa, SelectFallsBackToTheNextNarrowerVariant) {
  using Fn = int (*)();
  const Fn variants[kIsaLevelCount] = {&one, &two, nullptr, nullptr, nullptr};
  EXPECT_EQ(isa_select(variants, IsaLevel::scalar)(), 1);
  EXPECT_EQ(isa_select(variants, IsaLevel::avx2)(), 2);
  EXPECT_EQ(isa_select(variants, IsaLevel::avx512_vnni)(), 2) << "no avx512 variant: avx2's";
  EXPECT_EQ(isa_select(variants, IsaLevel::amx)(), 2);
}

// The AMX level is only ever granted together with the AVX-512 VNNI one, and
// asking twice gives the same answer (the grant is asked for once).
TEST(Isa, AmxImpliesVnniAndIsStable) {
  if (cpu_supports(IsaLevel::amx)) {
    EXPECT_TRUE(cpu_supports(IsaLevel::avx512_vnni));
    EXPECT_TRUE(amx_int8_granted());
  }
  EXPECT_EQ(amx_int8_granted(), amx_int8_granted());
}

}  // namespace
}  // namespace tessera
