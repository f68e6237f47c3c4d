// prompt_split.hpp: where a prompt split over several forwards ends a piece.
#pragma once

#include <cstdint>

#include "tessera/architecture.hpp"

namespace tessera {

// Of a piece of at most `n` tokens starting at position `start`, with `left`
// tokens of the prompt still to compute (n <= left), the length to take: n
// when it finishes the prompt, else cut back so the piece ends on a multiple
// of kPromptSplitAlignment; 0 when n reaches no multiple (the caller then
// waits for more room or takes n).
inline int32_t aligned_prompt_piece(int64_t start, int32_t n, int32_t left) {
  if (n >= left) return left;
  const int64_t end = start + n;
  const int64_t aligned_end = end - end % kPromptSplitAlignment;
  return aligned_end > start ? static_cast<int32_t>(aligned_end - start) : 0;
}

}  // namespace tessera
