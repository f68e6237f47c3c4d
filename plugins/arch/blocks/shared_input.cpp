#include "tessera/blocks/shared_input.hpp"

#include <omp.h>

#include <algorithm>
#include <array>

namespace tessera::blocks {
namespace {

// Below this much weight data a parallel region costs more than it saves (as
// the quant plugin's own threshold).
constexpr uint64_t kMinParallelBytes = 32 * 1024;
constexpr size_t kMaxGroup = 4;

}  // namespace

Status forward_shared_input(std::span<const LinearOutput> group, const float* x, int64_t n_rows) {
  bool split = group.size() <= kMaxGroup && n_rows <= kSharedInputMaxRows;
  uint64_t bytes = 0;
  for (const LinearOutput& g : group) {
    split = split && g.linear->splits();
    bytes += g.linear->weight_bytes();
  }
  if (!split) {
    for (const LinearOutput& g : group) TESSERA_RETURN_IF_ERROR(g.linear->forward(x, g.y, n_rows));
    return Status::Ok();
  }

  // Output columns are dealt in units of each Linear's alignment, the units of
  // all Linears laid end to end: thread t of nt takes units [U t / nt, U (t+1) / nt).
  std::array<int64_t, kMaxGroup + 1> first_unit{};
  for (size_t i = 0; i < group.size(); ++i) {
    const int64_t align = std::max<int64_t>(1, group[i].linear->column_alignment());
    first_unit[i + 1] = first_unit[i] + (group[i].linear->out_features() + align - 1) / align;
  }
  const int64_t units = first_unit[group.size()];
  std::array<Status, kMaxGroup> prepared;
  const auto n_linears = static_cast<int64_t>(group.size());

#pragma omp parallel if (bytes * static_cast<uint64_t>(n_rows) >= kMinParallelBytes)
  {
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n_linears; ++i)
      prepared[static_cast<size_t>(i)] = group[static_cast<size_t>(i)].linear->prepare(x, n_rows);
    // (the implicit barrier of the loop: every Linear is prepared)
    bool all_ok = true;
    for (int64_t i = 0; i < n_linears; ++i) all_ok = all_ok && prepared[static_cast<size_t>(i)].ok();
    if (all_ok) {
      const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
      const int64_t u_begin = units * t / nt, u_end = units * (t + 1) / nt;
      for (size_t i = 0; i < group.size(); ++i) {
        const int64_t lo = std::max(u_begin, first_unit[i]), hi = std::min(u_end, first_unit[i + 1]);
        if (lo >= hi) continue;
        Linear& linear = *group[i].linear;
        const int64_t align = std::max<int64_t>(1, linear.column_alignment());
        linear.compute(group[i].y, (lo - first_unit[i]) * align,
                       std::min(linear.out_features(), (hi - first_unit[i]) * align));
      }
    }
  }
  for (int64_t i = 0; i < n_linears; ++i) TESSERA_RETURN_IF_ERROR(prepared[static_cast<size_t>(i)]);
  return Status::Ok();
}

}  // namespace tessera::blocks
