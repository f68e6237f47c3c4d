#include "backend/cpu/read_bandwidth.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <new>

#include "tessera/tensor.hpp"

namespace tessera {

ReadBandwidth measure_read_bandwidth(int threads, uint64_t buffer_bytes, int passes) {
  ReadBandwidth r;
  r.threads = std::max(1, threads);
  r.passes = std::max(1, passes);
  const uint64_t words = buffer_bytes / sizeof(uint64_t);
  r.buffer_bytes = words * sizeof(uint64_t);
  if (words == 0) return r;
  // Written once by the threads that will read it, so first-touch places the
  // pages near them; the values only have to defeat dead-code elimination.
  HostBuffer buffer;
  try {
    buffer = HostBuffer::huge_pages(r.buffer_bytes);  // like the repacked weights
  } catch (const std::bad_alloc&) {
    return r;  // no memory: no figure (bytes_per_s 0)
  }
  auto* data = buffer.as<uint64_t>();
#pragma omp parallel for schedule(static) num_threads(r.threads)
  for (uint64_t i = 0; i < words; ++i) data[i] = i;

  // Each pass is made twice: a plain sum, and one that also prefetches 16
  // KiB in front of each thread's stream. On the Intel Xeon VMs the hardware
  // prefetchers alone let the plain sum read some 30% less than the one
  // reading ahead (docs/kernels.md, "Reading ahead"), and the 1.5B file's
  // decode then showed 110-125% of a plain probe's figure.
  constexpr uint64_t kLineWords = 64 / sizeof(uint64_t);
  constexpr uintptr_t kAheadBytes = 16384;
  volatile uint64_t sink = 0;
  for (int pass = 0; pass < 2 * r.passes; ++pass) {
    const bool ahead = pass % 2 == 1;
    uint64_t sum = 0;
    const auto start = std::chrono::steady_clock::now();
    // Integer adds vectorize without -ffast-math and cost far less than the
    // loads, so the loop runs at the speed memory delivers.
    if (ahead) {
      const uint64_t lines = words / kLineWords;
#pragma omp parallel for schedule(static) reduction(+ : sum) num_threads(r.threads)
      for (uint64_t line = 0; line < lines; ++line) {
        const uint64_t* p = data + line * kLineWords;
        // An address, not a pointer into the buffer: near its end it lies past it (prefetches never fault).
        __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(p) + kAheadBytes));
        for (uint64_t i = 0; i < kLineWords; ++i) sum += p[i];
      }
      for (uint64_t i = lines * kLineWords; i < words; ++i) sum += data[i];
    } else {
#pragma omp parallel for schedule(static) reduction(+ : sum) num_threads(r.threads)
      for (uint64_t i = 0; i < words; ++i) sum += data[i];
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    sink = sink + sum;
    if (s > 0) {
      double& best = ahead ? r.ahead_bytes_per_s : r.plain_bytes_per_s;
      best = std::max(best, static_cast<double>(r.buffer_bytes) / s);
    }
  }
  r.bytes_per_s = std::max(r.plain_bytes_per_s, r.ahead_bytes_per_s);
  return r;
}

}  // namespace tessera
