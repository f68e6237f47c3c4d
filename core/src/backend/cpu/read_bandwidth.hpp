// read_bandwidth.hpp: how fast this machine streams memory into the cores, now.
//
// The decode roofline is bytes read per token over the machine's read
// bandwidth. A quoted bandwidth hides that on a shared host the figure moves
// with the neighbours' load (25-47 GB/s across one afternoon on the 2-core
// development VM), so `tessera bench` measures it beside the decode figure.
#pragma once

#include <cstdint>

namespace tessera {

struct ReadBandwidth {
  double bytes_per_s = 0;        // the best pass: the larger of the two below
  double plain_bytes_per_s = 0;  // the best plain pass
  double ahead_bytes_per_s = 0;  // the best pass reading ahead (their ratio shows how much
                                 // the hardware prefetchers alone leave unread)
  uint64_t buffer_bytes = 0;
  int threads = 0;
  int passes = 0;
};

// Sums a buffer of `buffer_bytes` (rounded down to whole 64-bit words; it
// should dwarf the last-level cache) on `threads` OpenMP threads, each a
// contiguous share, `passes` times after one pass that faults the pages in,
// each time both plainly and prefetching ahead of the stream, and keeps the
// fastest pass: interference only ever slows a pass down. The
// buffer is 2 MiB-aligned and advised MADV_HUGEPAGE, like the quant plugin's
// repacked weights (plugins/quant/ggml/weight_arena.hpp): on 4 KiB pages the
// same loop reads 15-25% slower, which would flatter decode's share.
ReadBandwidth measure_read_bandwidth(int threads, uint64_t buffer_bytes = 256ull << 20, int passes = 3);

}  // namespace tessera
