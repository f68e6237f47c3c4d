// row_split.hpp: static partition of output rows among OpenMP threads.
#pragma once

#include <cstdint>

namespace tessera::ggml {

struct RowRange {
  int64_t begin;
  int64_t end;
};

// Thread `t` of `n` gets a contiguous range; boundaries fall on multiples of
// `align` (the kernel tile height) so no tile straddles two threads.
inline RowRange split_rows(int64_t total, int64_t align, int t, int n) {
  const int64_t tiles = (total + align - 1) / align;
  const int64_t per = tiles / n, extra = tiles % n;
  const int64_t first = t * per + (t < extra ? t : extra);
  const int64_t count = per + (t < extra ? 1 : 0);
  const int64_t begin = first * align;
  const int64_t end = (first + count) * align;
  return {begin < total ? begin : total, end < total ? end : total};
}

}  // namespace tessera::ggml
