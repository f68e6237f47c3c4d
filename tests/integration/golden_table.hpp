// golden_table.hpp: one row of the golden tables (golden_ids.inc from
// llama.cpp, golden_f32_ids.inc from the float64 reference): a prompt, and
// the engine's greedy ids and top-1 minus top-2 logit margin at each step.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera::test {

struct Golden {
  const char* prompt;
  bool chat;
  std::vector<int32_t> ids;
  std::vector<float> margins;
};

}  // namespace tessera::test
