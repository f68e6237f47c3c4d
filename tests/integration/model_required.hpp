// model_required.hpp: what a test does when the default model is absent.
//
// On a developer's machine it skips, saying how to fetch the model. Where
// TESSERA_REQUIRE_MODEL is set (scripts/test.sh sets it: CI fetches the model
// first), a missing model means the set-up is broken, and the test fails
// instead of passing by skipping.
#pragma once

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

namespace tessera::test {

inline bool model_required() {
  const char* v = std::getenv("TESSERA_REQUIRE_MODEL");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

}  // namespace tessera::test

// Fails (TESSERA_REQUIRE_MODEL set) or skips with `reason`.
#define TESSERA_MODEL_ABSENT(reason)                                                                  \
  do {                                                                                                \
    if (::tessera::test::model_required()) FAIL() << (reason) << " (TESSERA_REQUIRE_MODEL is set)";   \
    GTEST_SKIP() << (reason);                                                                         \
  } while (0)
