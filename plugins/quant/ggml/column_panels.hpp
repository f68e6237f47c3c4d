#pragma once
// column_panels.hpp: the one way the dense products of hessian_products_rows.cpp
// and gptq_linear_algebra_rows.cpp share their work among the OpenMP threads.
#include <algorithm>
#include <cstdint>

namespace tessera::ggml {

// fn(p, w) for each panel [p, p + w) of n columns, `width` wide (the last
// may be narrower), handed out one at a time to whichever thread is free
// (callers whose left panels are longer put them first). Always inside a
// parallel region, so Eigen never threads a panel's product itself: each
// panel's arithmetic depends on its shape alone, and the bits on no thread
// count. False when some fn threw (Eigen's blocking buffers ran out of
// memory): an exception must not leave an OpenMP region.
template <typename Fn>
bool for_each_column_panel(int64_t n, int64_t width, Fn&& fn) {
  const int64_t panels = (n + width - 1) / width;
  bool ok = true;
#pragma omp parallel for schedule(dynamic, 1) reduction(&& : ok)
  for (int64_t i = 0; i < panels; ++i) {
    const int64_t p = i * width;
    try {
      fn(p, std::min(width, n - p));
    } catch (...) {
      ok = false;
    }
  }
  return ok;
}

}  // namespace tessera::ggml
