// main() of the test executables that run once per instruction-set level
// (tessera_add_test ... EVERY_ISA_LEVEL). CTest sets TESSERA_ISA to the level;
// where this CPU lacks it, the run prints a GoogleTest skip line with the
// reason (CTest's SKIP_REGULAR_EXPRESSION reports the test as skipped)
// instead of passing at a narrower level under the wider level's name.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "tessera/isa.hpp"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (const char* env = std::getenv("TESSERA_ISA")) {
    const auto level = tessera::parse_isa_level(env);
    if (!level) {
      std::fprintf(stderr, "TESSERA_ISA=%s is not a level (scalar, avx2, avx512, avx512_vnni, amx)\n", env);
      return 1;
    }
    if (!tessera::cpu_supports(*level)) {
      std::printf("[  SKIPPED ] this CPU lacks the %s instruction-set level\n", env);
      return 0;
    }
  }
  return RUN_ALL_TESTS();
}
